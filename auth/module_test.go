package auth_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFromAnotherModule: an application outside this repository imports the
// package as it would (require + replace) and uses it to authenticate.
func TestFromAnotherModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a module that imports ticketd/auth: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.26\n\nrequire ticketd v0.0.0\n\nreplace ticketd => " + root + "\n",
		"main.go": `package main

import (
	"fmt"
	"os"

	"ticketd/auth"
)

func main() {
	set, err := auth.Parse([]byte("app 3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1 ids ids=10/s\n"), auth.Config{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	tok, err := set.Authenticate([]byte("Bearer 3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	ok, _ := tok.TakeIDs(10)
	fmt.Println(tok.Name, tok.Allows(auth.ScopeIDs), ok)
}
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "app true true"; got != want {
		t.Fatalf("the application printed %q, want %q", got, want)
	}
}
