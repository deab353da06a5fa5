package promtext

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// userHZ is the unit of the clock-tick fields of /proc (USER_HZ), 100 on
// every Linux architecture Go supports.
const userHZ = 100

// WriteProcess writes the process families Prometheus' Go client writes on
// Linux: CPU time, resident and virtual memory, open and maximum file
// descriptors, start time. A figure that cannot be read (a /proc without
// them) is left out, never made up.
func WriteProcess(w *Writer) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		w.Family("process_cpu_seconds_total", Counter, "Total user and system CPU time spent in seconds.")
		w.Float("process_cpu_seconds_total", cpu)
	}
	if st, ok := readStat(); ok {
		w.Family("process_resident_memory_bytes", Gauge, "Resident memory size in bytes.")
		w.Uint("process_resident_memory_bytes", st.rssPages*uint64(os.Getpagesize()))
		w.Family("process_virtual_memory_bytes", Gauge, "Virtual memory size in bytes.")
		w.Uint("process_virtual_memory_bytes", st.vsize)
		if boot, ok := bootTime(); ok {
			w.Family("process_start_time_seconds", Gauge, "Start time of the process since unix epoch in seconds.")
			w.Float("process_start_time_seconds", float64(boot)+float64(st.startTicks)/userHZ)
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		w.Family("process_open_fds", Gauge, "Number of open file descriptors.")
		w.Int("process_open_fds", int64(len(fds)))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		w.Family("process_max_fds", Gauge, "Maximum number of open file descriptors.")
		w.Uint("process_max_fds", lim.Cur)
	}
}

type procStat struct{ startTicks, vsize, rssPages uint64 }

// readStat reads /proc/self/stat (proc(5)). The command name, in
// parentheses, may hold spaces: fields are counted after its last ')'.
func readStat() (procStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 22 {
		return procStat{}, false
	}
	field := func(n int) uint64 { // n as numbered in proc(5)
		v, _ := strconv.ParseUint(string(f[n-3]), 10, 64)
		return v
	}
	return procStat{startTicks: field(22), vsize: field(23), rssPages: field(24)}, true
}

// bootTime is the btime line of /proc/stat: the boot time, in Unix seconds.
func bootTime() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
