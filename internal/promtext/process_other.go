//go:build !linux

package promtext

// WriteProcess writes nothing outside Linux: the process figures come from
// /proc.
func WriteProcess(*Writer) {}
