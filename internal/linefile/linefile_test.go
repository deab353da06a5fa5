package linefile

import "testing"

func TestMessage(t *testing.T) {
	var p Problems
	for n := 1; n <= MaxReported+3; n++ {
		p.Add(n, "bad %q", "x")
	}
	if len(p.Lines) != MaxReported || p.More != 3 || p.Lines[1] != (LineError{Line: 2, Msg: `bad "x"`}) {
		t.Fatalf("problems %+v", p)
	}
	for _, tt := range []struct {
		path  string
		lines []LineError
		more  int
		want  string
	}{
		{"", nil, 0, "x: file"},
		{"/etc/f", []LineError{{3, "bad"}}, 0, "x: file /etc/f: line 3: bad"},
		{"", []LineError{{3, "bad"}, {5, "worse"}}, 2, "x: file: line 3: bad; line 5: worse; and 2 more"},
	} {
		if got := Message("x: file", tt.path, tt.lines, tt.more); got != tt.want {
			t.Errorf("Message(%q, %v, %d) = %q, want %q", tt.path, tt.lines, tt.more, got, tt.want)
		}
	}
}
