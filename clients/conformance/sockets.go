package conformance

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Sockets returns the TCP connections process pid holds open to any of
// ports on this host (from /proc: its descriptors' socket inodes, looked
// up in the TCP tables of its network namespace), each as "local ->
// remote (state)". A client that closed its connections holds none,
// whatever its language: the kernel's view needs no help from the runtime.
func Sockets(pid int, ports []int) ([]string, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	var open []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
			col := strings.Fields(sc.Text())
			if len(col) < 10 || !inodes[col[9]] {
				continue
			}
			if port := hexPort(col[2]); want[port] {
				open = append(open, fmt.Sprintf("%s -> %s (state %s)", col[1], col[2], tcpStates[col[3]]))
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return open, nil
}

// hexPort is the port of a /proc/net/tcp address (ADDR:PORT, hex).
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}

var tcpStates = map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}
