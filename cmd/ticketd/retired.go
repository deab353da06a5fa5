package main

import "flag"

// A serve flag a release removes is accepted, with a warning, by the next
// release, so that a unit file or environment written for the release
// before still starts it (docs/upgrading.md, "Upgrading"); the release
// after that refuses it as unknown. CHANGELOG.md names each.
type retiredFlag struct {
	// isBool: the flag took no value (-name, or -name=true).
	isBool bool
	// instead says what replaced it, or why it is no longer needed.
	instead string
}

// retiredFlags is every serve flag removed by this release. None: releases
// 2 and 3 removed no flag.
var retiredFlags = map[string]retiredFlag{}

// retiredValue takes a retired flag's value and notes that it was given.
type retiredValue struct {
	name string
	used *[]string
	bool bool
}

func (v retiredValue) String() string   { return "" }
func (v retiredValue) IsBoolFlag() bool { return v.bool }
func (v retiredValue) Set(string) error {
	*v.used = append(*v.used, v.name)
	return nil
}

// registerRetired defines every retired flag on fs; used collects the
// names of those given (flag or environment), for buildServe to warn about.
func registerRetired(fs *flag.FlagSet, used *[]string) {
	for name, r := range retiredFlags {
		fs.Var(retiredValue{name: name, used: used, bool: r.isBool}, name, "retired, ignored: "+r.instead)
	}
}
