package auth

import "testing"

func TestLoopbackOnly(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.1.2.3:8080", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"localhost:8080", true},
		{"LOCALHOST:8080", true},
		{":8080", false},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{"10.0.2.21:8080", false},
		{"[fe80::1%eth0]:8080", false},
		{"ids.example.com:8080", false},
		{"128.0.0.1:8080", false},
	}
	for _, tt := range tests {
		got, err := LoopbackOnly(tt.addr)
		if err != nil || got != tt.want {
			t.Errorf("LoopbackOnly(%q) = %v, %v; want %v", tt.addr, got, err, tt.want)
		}
	}
	for _, bad := range []string{"127.0.0.1", "", "[::1"} {
		if _, err := LoopbackOnly(bad); err == nil {
			t.Errorf("LoopbackOnly(%q): no error", bad)
		}
	}
}
