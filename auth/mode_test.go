package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "a "+tokA+" ids\n")
	tests := []struct {
		mode os.FileMode
		want string // "" for no warning
	}{
		{0o600, ""},
		{0o400, ""},
		{0o700, ""},
		{0o640, "mode 0640, so its group may read it"},
		{0o604, "mode 0604, so others may read it"},
		{0o644, "mode 0644, so its group and others may read it"},
		{0o620, "mode 0620, so its group may write it"},
		{0o666, "its group and others may read and write it"},
	}
	for _, tt := range tests {
		if err := os.Chmod(path, tt.mode); err != nil {
			t.Fatal(err)
		}
		err := CheckFileMode(path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("mode %04o: got %v, want no warning", tt.mode, err)
		case tt.want != "" && (!errors.Is(err, ErrFileMode) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("mode %04o: got %v, want ErrFileMode saying %q", tt.mode, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), tokA) {
			t.Errorf("mode %04o: the warning quotes the content: %v", tt.mode, err)
		}
	}
	// A mode warning is no refusal: the file still loads.
	if _, err := Open(path, Config{}); err != nil {
		t.Errorf("Open of a mode 0666 file: %v", err)
	}
	if err := CheckFileMode(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
}
