package main

import (
	"strconv"
	"strings"

	"ticketd/ticket"
	"ticketd/ticket/seqname"
)

// claimsConfig sets the bounds of the claims of named sequences
// (-claim-max-values, -claim-max-share, -claim-limits) on the pair's
// config. On the command line 0 means one block at a time; the library's
// zero is its default and its negative one block at a time.
func (c *serveConfig) claimsConfig(o serveOptions) error {
	if o.claimMaxValues < 0 || o.claimMaxValues > ticket.MaxClaimMaxValues {
		return usagef("-claim-max-values %d: want 0 (one block at a time) to %d", o.claimMaxValues, int64(ticket.MaxClaimMaxValues))
	}
	if !(o.claimMaxShare > 0 && o.claimMaxShare <= 1) {
		return usagef("-claim-max-share %v: want a share above 0, at most 1", o.claimMaxShare)
	}
	limits, err := parseClaimLimits(o.claimLimits)
	if err != nil {
		return err
	}
	c.pair.ClaimMaxValues = flagValues(o.claimMaxValues)
	c.pair.ClaimMaxShare = o.claimMaxShare
	c.pair.ClaimLimits = limits
	return nil
}

// flagValues is a bound of the command line as the library reads it.
func flagValues(v int64) int64 {
	if v == 0 {
		return -1 // one block at a time
	}
	return v
}

// parseClaimLimits reads -claim-limits: NAME=VALUES[,NAME=VALUES…], each
// name a sequence name once, each bound 0 (one block at a time) up to
// ticket.MaxClaimMaxValues. Empty: none.
func parseClaimLimits(s string) (map[string]int64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]int64{}
	for item := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, usagef("-claim-limits: %.64q: want NAME=VALUES", item)
		}
		if !seqname.Valid(name) {
			return nil, usagef("-claim-limits: %.64q is no sequence name: a lowercase letter, then up to 47 lowercase letters, digits or _", name)
		}
		if _, dup := out[name]; dup {
			return nil, usagef("-claim-limits: %s is given twice", name)
		}
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil || v < 0 || v > ticket.MaxClaimMaxValues || strings.HasPrefix(val, "+") {
			return nil, usagef("-claim-limits: %s=%.32q: want 0 (one block at a time) to %d values", name, val, int64(ticket.MaxClaimMaxValues))
		}
		out[name] = flagValues(v)
	}
	return out, nil
}
