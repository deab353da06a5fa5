package main

import (
	"log/slog"

	"ticketd/publicid"
)

// reloadIDKeys is what SIGHUP does to -id-key-file: keys added for decoding
// apply at once; a new encoding key or a dropped key would change answers
// already given (a public form handed out, a form that decoded) and waits
// for a restart (publicid.Store.Reload). Only check values are logged.
func reloadIDKeys(log *slog.Logger, st *publicid.Store) {
	if st == nil {
		return
	}
	r, err := st.Reload()
	if err != nil {
		log.Error("ID key file NOT reloaded: the previous keys stay in force", "err", err)
		return
	}
	log.Info("ID key file reloaded", "keys", r.Len(), "encoding_key_check", r.Check(), "file", st.Path())
}
