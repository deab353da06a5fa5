package auth

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write then rename, as an operator's editor or a deploy tool does, so a
	// reader never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          error
	}{
		{"empty", "", ErrNoTokens},
		{"bad line", "x " + tokA + " nope\n", ErrBadFile},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.name)
		writeFile(t, path, tt.content)
		if _, err := Open(path, Config{}); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing"), Config{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
	big := filepath.Join(dir, "big")
	writeFile(t, big, string(make([]byte, MaxFileSize+1)))
	if _, err := Open(big, Config{}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big file: got %v, want ErrTooLarge", err)
	}
}

// TestReload: a good file replaces the set; a bad one (broken, empty,
// removed) leaves the old set answering, and the error names the file.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "a "+tokA+" ids\n")
	st, err := Open(path, Config{Clock: &fakeClock{}})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(tok string) string {
		got, err := st.Authenticate([]byte("Bearer " + tok))
		if err != nil {
			return err.Error()
		}
		return got.Name
	}
	if got := auth(tokA); got != "a" {
		t.Fatalf("before reload: got %s, want a", got)
	}

	writeFile(t, path, "b "+tokB+" ids\n")
	if s, err := st.Reload(); err != nil || s != st.Load() {
		t.Fatalf("Reload of a good file: %v (set %p, current %p)", err, s, st.Load())
	}
	if got := auth(tokA); got != ErrUnknownToken.Error() {
		t.Fatalf("after reload, the removed token: got %s, want refused", got)
	}
	if got := auth(tokB); got != "b" {
		t.Fatalf("after reload, the new token: got %s, want b", got)
	}

	for _, bad := range []string{"b " + tokB + " idz\n", "", "# emptied\n"} {
		writeFile(t, path, bad)
		_, err := st.Reload()
		if err == nil {
			t.Fatalf("Reload of %q succeeded", bad)
		}
		if !errors.Is(err, ErrBadFile) && !errors.Is(err, ErrNoTokens) {
			t.Fatalf("Reload of %q: got %v", bad, err)
		}
		if got := auth(tokB); got != "b" {
			t.Fatalf("after a failed reload of %q: got %s, want the old token still b", bad, got)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reload(); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Reload of a removed file: got %v, want os.ErrNotExist", err)
	}
	if got := auth(tokB); got != "b" {
		t.Fatalf("after the file was removed: got %s, want the old token still b", got)
	}
}

// TestReloadKeepsBuckets: a reload neither refills nor empties the quota of
// a token whose quota is unchanged; a changed quota starts full.
func TestReloadKeepsBuckets(t *testing.T) {
	clk := &fakeClock{}
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "a "+tokA+" ids ids=10/s\nb "+tokB+" ids ids=10/s\n")
	st, err := Open(path, Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if ok, _ := st.Load().Token(name).TakeIDs(10); !ok {
			t.Fatalf("%s: first 10 refused", name)
		}
	}
	writeFile(t, path, "a "+tokA+" ids ids=10/s\nb "+tokB+" ids ids=20/s\n")
	if _, err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := st.Load().Token("a").TakeIDs(1); ok {
		t.Fatal("a: the reload refilled an unchanged quota")
	}
	if ok, _ := st.Load().Token("b").TakeIDs(20); !ok {
		t.Fatal("b: a changed quota did not start full")
	}
}

// TestReloadUnderLoad: requests running while the file is reloaded again
// and again (100 times) all succeed with a token present in every version, and a token
// removed in one version is refused once that version is loaded. Run it
// with -race.
func TestReloadUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	versions := []string{
		"a " + tokA + " ids\nb " + tokB + " ids\n",
		"b " + tokB + " ids\na " + sha(tokA) + " ids,status\n",
		"a " + tokA + " ids ids=1000000/s\n",
	}
	writeFile(t, path, versions[0])
	st, err := Open(path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var failures, served atomic.Int64
	var wg sync.WaitGroup
	// Leave a processor to the reloading goroutine: spinning readers on
	// every one would make each reload wait for a preemption.
	for range max(1, runtime.GOMAXPROCS(0)-1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := []byte("Bearer " + tokA)
			for !stop.Load() {
				tok, err := st.Authenticate(h)
				if err != nil || tok.Name != "a" || !tok.Allows(ScopeIDs) {
					failures.Add(1)
				}
				served.Add(1)
			}
		}()
	}
	// waitServed returns once the readers served k more requests: each
	// reload happens while they run, never between bursts of them.
	waitServed := func(k int64) {
		for start := served.Load(); served.Load() < start+k; {
			runtime.Gosched()
		}
	}
	for i := range 100 {
		writeFile(t, path, versions[i%len(versions)])
		if _, err := st.Reload(); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		waitServed(10)
	}
	writeFile(t, path, versions[2]) // end on the version without b
	if _, err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	waitServed(1000)
	stop.Store(true)
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d of %d requests failed across 100 reloads", n, served.Load())
	}
	if _, err := st.Authenticate([]byte("Bearer " + tokB)); err != ErrUnknownToken {
		t.Fatalf("token b, removed by the last version: got %v, want ErrUnknownToken", err)
	}
}
