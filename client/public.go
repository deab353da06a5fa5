package client

import (
	"fmt"
	"time"

	"ticketd/publicid"
)

// Public returns the public form of id under the encoding key of
// Config.IDKeys, locally (package publicid; docs/api.md, "Public forms"):
// the number to show, where id stays the primary key. It allocates nothing.
func (c *Client) Public(id int64) (int64, error) {
	if c.cfg.IDKeys == nil {
		return 0, ErrNoKeys
	}
	return c.cfg.IDKeys.Public(id)
}

// FromPublic returns the IDs a public form stands for under the keys of
// Config.IDKeys, locally: those whose time (under Config.Layout) lies
// between the epoch and a second from now, the encoding key's first. Under
// one key that is at most one ID; none is an error wrapping ErrNotPublic.
// Under a ring of several keys, look the first up and, if no record has it,
// the next (see package publicid, "Decoding under a ring").
func (c *Client) FromPublic(form int64) ([]publicid.Decoding, error) {
	if c.cfg.IDKeys == nil {
		return nil, ErrNoKeys
	}
	l := c.cfg.Layout
	shift := l.SequenceBits + l.WorkerBits + l.DatacenterBits
	latest := time.Now().Add(time.Second).UnixMilli()
	found, err := c.cfg.IDKeys.Decode(form, func(id int64) bool { return id>>shift+l.EpochMs <= latest })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotPublic, err)
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w: %d is no ID of layout %s under any of the %d keys", ErrNotPublic, form, l, c.cfg.IDKeys.Len())
	}
	return found, nil
}
