package doccheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RunConsole runs the commands of a console block, in one bash, from dir,
// with env, each command after rewrite, and compares what each one printed
// (stdout and stderr together) with the output documented for it (Compare,
// exact for a block marked exact). It returns what differs: one error per
// command that printed something else or did not run, or one for a block
// that could not be read or did not finish within timeout, each beginning
// with its line in the doc.
func RunConsole(b Block, dir string, env []string, rewrite func(string) string, timeout time.Duration) []error {
	steps, err := b.Steps()
	if err != nil {
		return []error{fmt.Errorf("%d: %w", b.Line, err)}
	}
	outDir, err := os.MkdirTemp("", "doccheck-console-")
	if err != nil {
		return []error{fmt.Errorf("%d: %w", b.Line, err)}
	}
	defer os.RemoveAll(outDir)
	var script strings.Builder
	script.WriteString("set +e\n")
	for i, s := range steps {
		// Braces, not a subshell: a cd or a variable carries over to the next
		// command, as in a terminal; so does the exit status ($?).
		fmt.Fprintf(&script, "{ %s\n} >%q 2>&1 </dev/null\n__rc=$?; (exit $__rc)\n", rewrite(s.Cmd), filepath.Join(outDir, strconv.Itoa(i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil && ctx.Err() != nil {
		return []error{fmt.Errorf("%d: the block did not finish within %v: %v\n%s", b.Line, timeout, err, out)}
	}
	var errs []error
	for i, s := range steps {
		got, err := os.ReadFile(filepath.Join(outDir, strconv.Itoa(i)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%d: `%s` did not run: %v", s.Line, s.Cmd, err))
			continue
		}
		if err := Compare(s.Want, string(got), b.Mode == "exact"); err != nil {
			errs = append(errs, fmt.Errorf("%d: `%s`: %v\nthe docs say:\n%s\nit printed:\n%s", s.Line, s.Cmd, err, s.Want, got))
		}
	}
	return errs
}
