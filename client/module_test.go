package client

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// appMain is a program of another module that uses the package the way an
// application does.
const appMain = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"ticketd/client"
)

func main() {
	c, err := client.New(client.Config{Endpoints: os.Args[1:], MaxAge: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := c.Next(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ids := make([]int64, 2)
	if _, err := c.NextN(ctx, ids); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_, err = client.New(client.Config{})
	fmt.Println(id, ids[0], ids[1], c.Stats().IDs.Served, errors.Is(err, client.ErrNoEndpoints))
}
`

// TestFromAnotherModule builds a program of another module that requires
// this one (replace => this checkout, as before the module is published)
// and runs it against a server: the package is importable and usable from
// outside. It builds with no module proxy and an empty module cache, which
// shows the package needs the standard library only.
func TestFromAnotherModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module app\n\ngo 1.26\n\nrequire ticketd v0.0.0\n\nreplace ticketd => " + root + "\n"
	for name, body := range map[string]string{"go.mod": gomod, "main.go": appMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command("go", "build", "-o", "app", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOMODCACHE="+filepath.Join(dir, "modcache"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of a module that imports ticketd/client: %v\n%s", err, out)
	}
	srv := httptest.NewServer(&binaryServer{next: 41})
	defer srv.Close()
	out, err := exec.Command(filepath.Join(dir, "app"), srv.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("the program failed: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "42 43 44 3 true"; got != want {
		t.Fatalf("the program printed %q, want %q", got, want)
	}
}
