package doccheck

import (
	"fmt"
	"strings"
)

// JavaUnit makes a java block a compilation unit of class class, as the
// docs show it: its import lines first, then every other line as the body
// of a method that may throw anything. A snippet shows statements, so it
// compiles as shown only with the imports it needs written in it.
func JavaUnit(b Block, class string) string {
	var imports, body []string
	for _, line := range b.Body {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "import ") {
			imports = append(imports, t)
			continue
		}
		body = append(body, "        "+line)
	}
	return fmt.Sprintf("%s\n\nclass %s {\n    static void snippet() throws Exception {\n%s\n    }\n}\n",
		strings.Join(imports, "\n"), class, strings.Join(body, "\n"))
}
