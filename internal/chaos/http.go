package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one keep-alive HTTP/1.1 connection whose requests are strictly
// sequential: each waits for the answer to the one before. Written by hand, so
// that nothing retries a request behind our back and every failure is seen.
type conn struct {
	addr string
	// closeEach: every request says Connection: close, so that each one is
	// sent on a new connection (the control's while a ticketd drains: tail.go).
	closeEach bool
	c         net.Conn
	br        *bufio.Reader
	req       []byte
	body      []byte
}

// response is one parsed answer; body aliases the connection's buffer until
// the next request.
type response struct {
	status   int
	body     []byte
	close    bool   // Connection: close
	idSource string // X-ID-Source
}

var errNoLength = errors.New("answer without Content-Length")

// get sends GET path and reads the answer, all before deadline. Any error
// closes the connection; the next get dials again.
func (c *conn) get(path string, deadline time.Time) (response, error) {
	if c.c == nil {
		d := net.Dialer{Deadline: deadline}
		nc, err := d.Dial("tcp", c.addr)
		if err != nil {
			return response{}, err
		}
		c.c = nc
		if c.br == nil {
			c.br = bufio.NewReaderSize(nc, 16<<10)
		} else {
			c.br.Reset(nc)
		}
	}
	_ = c.c.SetDeadline(deadline)
	c.req = append(append(append(c.req[:0], "GET "...), path...), " HTTP/1.1\r\nHost: chaos\r\n"...)
	if c.closeEach {
		c.req = append(c.req, "Connection: close\r\n"...)
	}
	c.req = append(c.req, "\r\n"...)
	if _, err := c.c.Write(c.req); err != nil {
		c.close()
		return response{}, err
	}
	r, body, err := readResponse(c.br, c.body[:0], false)
	c.body = body
	if err != nil || r.close {
		c.close()
	}
	return r, err
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}

// readResponse reads one HTTP/1.1 answer from br into buf. head: the request
// was a HEAD (no body follows).
func readResponse(br *bufio.Reader, buf []byte, head bool) (response, []byte, error) {
	for {
		r, buf, err := readOne(br, buf, head)
		// An interim answer (100 Continue) has headers only; the real one follows.
		if err != nil || r.status >= 200 {
			return r, buf, err
		}
	}
}

func readOne(br *bufio.Reader, buf []byte, head bool) (response, []byte, error) {
	var r response
	line, err := readLine(br)
	if err != nil {
		return r, buf, err
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return r, buf, fmt.Errorf("bad status line %.64q", line)
	}
	r.status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return r, buf, fmt.Errorf("bad status line %.64q", line)
	}
	length := -1
	for {
		line, err = readLine(br)
		if err != nil {
			return r, buf, err
		}
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, buf, fmt.Errorf("bad header line %.64q", line)
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 || length > 64<<20 {
				return r, buf, fmt.Errorf("bad Content-Length %.32q", v)
			}
		case bytes.EqualFold(k, []byte("Connection")):
			r.close = bytes.EqualFold(v, []byte("close"))
		case bytes.EqualFold(k, []byte("X-ID-Source")):
			r.idSource = string(v)
		}
	}
	if head || r.status < 200 {
		return r, buf, nil
	}
	if length < 0 {
		return r, buf, errNoLength
	}
	if cap(buf) < length {
		buf = make([]byte, length)
	}
	buf = buf[:length]
	if _, err := io.ReadFull(br, buf); err != nil {
		return r, buf, err
	}
	r.body = buf
	return r, buf, nil
}

func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("header line too long")
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// parseInts appends the decimal numbers of body, one a line, to dst.
func parseInts(dst []int64, body []byte) ([]int64, error) {
	for len(body) > 0 {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		body = rest
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		v, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil || v <= 0 {
			return dst, fmt.Errorf("not an ID: %.40q", line)
		}
		dst = append(dst, v)
	}
	return dst, nil
}
