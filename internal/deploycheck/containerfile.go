package deploycheck

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Instruction is one instruction of a Containerfile (Dockerfile syntax):
// the keyword in upper case, the rest of the line (continuations joined)
// and the line it starts on.
type Instruction struct {
	Cmd, Args string
	Line      int
}

// Containerfile is a parsed Containerfile: its instructions and the text of
// its comments (without the leading #).
type Containerfile struct {
	Instructions []Instruction
	Comments     []string
}

// ParseContainerfile reads a Containerfile: one instruction per line, a
// backslash at the end of a line continuing it, # starting a comment line.
func ParseContainerfile(text string) (*Containerfile, error) {
	cf := &Containerfile{}
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		n := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" {
			continue
		}
		if line[0] == '#' {
			cf.Comments = append(cf.Comments, strings.TrimSpace(line[1:]))
			continue
		}
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(lines[i])
		}
		cmd, args, _ := strings.Cut(line, " ")
		if cmd == "" || strings.ToUpper(cmd) != cmd {
			return nil, fmt.Errorf("line %d: want an instruction in upper case, got %q", n, line)
		}
		cf.Instructions = append(cf.Instructions, Instruction{Cmd: cmd, Args: strings.TrimSpace(args), Line: n})
	}
	return cf, nil
}

// All returns the instructions with keyword cmd, in order.
func (cf *Containerfile) All(cmd string) []Instruction {
	var out []Instruction
	for _, in := range cf.Instructions {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// Env returns the variables the ENV instructions set (ENV K=V, several per
// instruction allowed; values without blanks or in double quotes).
func (cf *Containerfile) Env() (map[string]string, error) {
	env := map[string]string{}
	for _, in := range cf.All("ENV") {
		words, err := SplitCommand(in.Args)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", in.Line, err)
		}
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("line %d: want ENV KEY=VALUE, got %q", in.Line, w)
			}
			env[k] = v
		}
	}
	return env, nil
}

// ExecForm reads a JSON-array argument (ENTRYPOINT ["a", "b"]). The shell
// form is refused: an image FROM scratch has no shell to run it.
func ExecForm(in Instruction) ([]string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(in.Args), &argv); err != nil || len(argv) == 0 {
		return nil, fmt.Errorf("line %d: %s %s: want the exec form, a JSON array of strings", in.Line, in.Cmd, in.Args)
	}
	return argv, nil
}
