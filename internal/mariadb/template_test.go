package mariadb

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	files := map[string]string{"ibdata1": "one", "mysql/global_priv.MAD": "two", "mysql/deeper/x": "three"}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, want)
		}
	}
	// dst must be fresh: a second copy onto it fails rather than mixing.
	if err := copyTree(src, dst); err == nil {
		t.Error("copyTree onto an existing copy: got no error, want one")
	}
}

func TestTemplateCompleteAndSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	keep := filepath.Join(tmp, templatePrefix+"keep")
	old := filepath.Join(tmp, templatePrefix+"old")
	recent := filepath.Join(tmp, templatePrefix+"recent")
	for _, d := range []string{keep, old, recent} {
		for _, f := range []string{"ibdata1", "ib_logfile0", "mysql/global_priv.MAI", "mysql/global_priv.MAD"} {
			p := filepath.Join(d, "data", f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !templateComplete(keep) {
		t.Fatalf("templateComplete(%s) = false, want true", keep)
	}
	if err := os.Remove(filepath.Join(recent, "data", "ib_logfile0")); err != nil {
		t.Fatal(err)
	}
	if templateComplete(recent) {
		t.Errorf("templateComplete of a template missing ib_logfile0 = true, want false")
	}
	long := time.Now().Add(-48 * time.Hour)
	for _, d := range []string{keep, old} {
		if err := os.Chtimes(d, long, long); err != nil {
			t.Fatal(err)
		}
	}
	sweepTemplates(keep, 24*time.Hour)
	for d, want := range map[string]bool{keep: true, old: false, recent: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s after the sweep: exists=%v, want %v", filepath.Base(d), got, want)
		}
	}
}
