package mariadb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// notOnPath is a PATH lookup that finds nothing.
func notOnPath(string) (string, error) { return "", exec.ErrNotFound }

// fakeProgram writes an executable (or not) file named name into dir.
func fakeProgram(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookBinariesMissingNamesEachProgram(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, dir, "mariadbd", 0o755)
	fakeProgram(t, dir, "mariadb", 0o644) // not executable: does not count
	_, err := lookBinaries(notOnPath, []string{dir})
	if err == nil {
		t.Fatal("lookBinaries with three programs missing: got no error, want one")
	}
	msg := err.Error()
	for _, want := range []string{"mariadb-install-db", "mariadb-dump", "mariadb,", Install} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, "mariadbd") {
		t.Errorf("error %q names mariadbd, which is there", msg)
	}
}

func TestLookBinariesPathFirstThenDirs(t *testing.T) {
	onPath, dir := t.TempDir(), t.TempDir()
	path := fakeProgram(t, onPath, "mariadb", 0o755)
	for _, n := range []string{"mariadbd", "mariadb-install-db", "mariadb", "mariadb-dump"} {
		fakeProgram(t, dir, n, 0o755)
	}
	look := func(name string) (string, error) {
		if name == "mariadb" {
			return path, nil
		}
		return "", exec.ErrNotFound
	}
	b, err := lookBinaries(look, []string{t.TempDir(), dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.client != path {
		t.Errorf("client: got %s, want %s from PATH", b.client, path)
	}
	if want := filepath.Join(dir, "mariadbd"); b.mariadbd != want {
		t.Errorf("mariadbd: got %s, want %s", b.mariadbd, want)
	}
	if want := filepath.Join(dir, "mariadb-dump"); b.dump != want {
		t.Errorf("dump: got %s, want %s", b.dump, want)
	}
}
