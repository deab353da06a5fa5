package auth

import (
	"fmt"
	"io/fs"
	"os"
)

// CheckFileMode returns an error wrapping ErrFileMode when the file at path
// may be read or written by its group or by others (any of mode 0066), and
// the error of os.Stat when it cannot be examined. It is a warning: a
// server logs it and goes on, since the operator may have reasons (a group
// that only the service is in); nothing in this package refuses such a file.
// The message names the mode and the fix, never the content.
func CheckFileMode(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("auth: tokens file: %w", err)
	}
	mode := fi.Mode().Perm()
	if mode&0o066 == 0 {
		return nil
	}
	who := "its group and others"
	switch {
	case mode&0o060 == 0:
		who = "others"
	case mode&0o006 == 0:
		who = "its group"
	}
	return fmt.Errorf("%w: %s has mode %04o, so %s may %s it: chmod 600 %s", ErrFileMode, path, mode, who, rw(mode), path)
}

func rw(mode fs.FileMode) string {
	r, w := mode&0o044 != 0, mode&0o022 != 0
	switch {
	case r && w:
		return "read and write"
	case w:
		return "write"
	}
	return "read"
}
