package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// javaClassRE is a class declared at the top level of a java block.
var javaClassRE = regexp.MustCompile(`^(?:public\s+)?(?:final\s+)?class\s+([A-Za-z_][A-Za-z0-9_]*)`)

// JavaProgram is the class a java block declares at its top level: the
// block is a whole program (docs/tour.md's), which compiles as shown in a
// file of that name. "" for a snippet of statements (JavaUnit).
func JavaProgram(b Block) string {
	for _, line := range b.Body {
		if m := javaClassRE.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

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
