package frontend

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/valyala/fasthttp"

	"ticketd/publicid"
	"ticketd/snowflake"
)

// Public forms (package publicid): with=public on /v1/id and /v1/ids hands
// each ID out with its public form; /v1/ids/{id} shows an ID's; with
// from=public, /v1/ids/{form} turns a form back into the ID. Applications
// keep the ID as their key and show the form. The keys come from
// Config.IDKeys and are never written anywhere.

// publicRing is the ring to encode with when the request asks for public
// forms, or a message for a 400 when this ticketd has no keys.
func (s *Server) publicRing(q query) (*publicid.Ring, string) {
	if !q.public() {
		return nil, ""
	}
	if s.cfg.IDKeys == nil {
		return nil, errNoKeys
	}
	return s.cfg.IDKeys.Load(), ""
}

const errNoKeys = "public forms are off: this ticketd has no -id-key-file"

// decodedWithPublic is /v1/ids/{id}'s answer when ticketd has keys.
type decodedWithPublic struct {
	snowflake.Decoded
	Public string `json:"public"`
}

// fromPublic is /v1/ids/{form}?from=public's answer: the ID under the
// first key of the ring that gives an ID of this deployment (its fields and
// key, 0 being the encoding key), and under which other keys the form also
// gives one (see "Decoding under a ring" in package publicid).
type fromPublic struct {
	Public string `json:"public"`
	snowflake.Decoded
	Key  int         `json:"key"`
	Also []alsoDecod `json:"also"`
}

type alsoDecod struct {
	ID  string `json:"id"`
	Key int    `json:"key"`
}

// handleFromPublic decodes a public form. A form that no key of the ring
// turns into an ID this deployment could have issued (at or above its
// smallest snowflake ID, within the bound of after=: aheadBy) is a 400:
// nothing this deployment issued has it.
func (s *Server) handleFromPublic(ctx *fasthttp.RequestCtx, seg []byte) {
	if s.cfg.IDKeys == nil {
		fail(ctx, fasthttp.StatusBadRequest, errNoKeys)
		return
	}
	form, err := snowflake.ParseID(string(seg))
	if err != nil {
		fail(ctx, fasthttp.StatusBadRequest, "bad public form: "+err.Error()+": want a positive decimal integer below 2^63")
		return
	}
	ring := s.cfg.IDKeys.Load()
	found, err := ring.Decode(form, func(id int64) bool {
		if id < s.cfg.FallbackCeiling {
			return false
		}
		_, _, past := s.aheadBy(ctx, id)
		return !past
	})
	if err != nil {
		fail(ctx, fasthttp.StatusBadRequest, "bad public form: "+err.Error())
		return
	}
	if len(found) == 0 {
		fail(ctx, fasthttp.StatusBadRequest, fmt.Sprintf("public form %d is no ID of this deployment under any of its %d keys", form, ring.Len()))
		return
	}
	d, err := s.cfg.Layout.Describe(found[0].ID)
	if err != nil {
		fail(ctx, fasthttp.StatusInternalServerError, "internal error: "+err.Error())
		return
	}
	out := fromPublic{Public: strconv.FormatInt(form, 10), Decoded: d, Key: found[0].Key, Also: []alsoDecod{}}
	for _, f := range found[1:] {
		out.Also = append(out.Also, alsoDecod{ID: strconv.FormatInt(f.ID, 10), Key: f.Key})
	}
	writeJSON(ctx, out)
}

// appendWithPublic writes a batch of IDs each with its public form: "ID
// FORM" lines, {"ids":[…],"public":[…]}, or 16 bytes per ID (the ID, then
// its form). IDs are positive, so Public cannot fail.
func appendWithPublic(dst []byte, ring *publicid.Ring, ids []int64, f format) []byte {
	switch f {
	case formatJSON:
		dst = append(dst, `{"ids":`...)
		dst = appendValues(dst, ids, true)
		dst = append(dst, `,"public":[`...)
		for i, id := range ids {
			if i > 0 {
				dst = append(dst, ',')
			}
			p, _ := ring.Public(id)
			dst = appendQuotedInt(dst, p)
		}
		return append(dst, "]}\n"...)
	case formatBinary:
		for _, id := range ids {
			p, _ := ring.Public(id)
			dst = binary.BigEndian.AppendUint64(dst, uint64(id))
			dst = binary.BigEndian.AppendUint64(dst, uint64(p))
		}
		return dst
	}
	for _, id := range ids {
		p, _ := ring.Public(id)
		dst = strconv.AppendInt(dst, id, 10)
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, p, 10)
		dst = append(dst, '\n')
	}
	return dst
}

// contentType is the Content-Type of an answer in format f.
func contentType(f format) []byte {
	switch f {
	case formatJSON:
		return ctJSON
	case formatBinary:
		return ctBinary
	}
	return ctText
}
