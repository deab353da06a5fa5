package frontend

import (
	"runtime"
	"runtime/debug"
)

// buildInfo returns the labels of ticketd_build_info: version (the given
// one, or else the main module's as the Go toolchain stamped it: a tag, a
// pseudo-version from the VCS, "(devel)"), the VCS revision the binary was
// built from, and the Go version. What is not known reads "unknown".
func buildInfo(version string) (v, revision, goversion string) {
	v, revision, goversion = version, "", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if v == "" {
		v = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	return v, revision, goversion
}
