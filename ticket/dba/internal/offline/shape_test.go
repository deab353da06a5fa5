package offline

import (
	"strings"
	"testing"
)

func flickr(name string) *TableShape {
	return &TableShape{Name: name, Engine: "InnoDB", Counter: 5200000001, ID: "id", IDType: "bigint", IDPrimary: true, StubType: "char", StubUnique: true}
}

func TestShaped(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*TableShape)
		want string // "" shaped; else a part of why not
	}{
		{"Flickr's", func(*TableShape) {}, ""},
		{"32 bits", func(s *TableShape) { s.IDType = "int" }, ""},
		{"a varchar stub", func(s *TableShape) { s.StubType = "varchar" }, ""},
		{"MyISAM", func(s *TableShape) { s.Engine = "MyISAM" }, "engine is MyISAM"},
		{"no counter", func(s *TableShape) { s.ID, s.IDType = "", "" }, "no AUTO_INCREMENT"},
		{"a mediumint counter", func(s *TableShape) { s.IDType = "mediumint" }, "mediumint, not BIGINT"},
		{"a counter beside the key", func(s *TableShape) { s.IDPrimary = false }, "not its primary key"},
		{"no stub", func(s *TableShape) { s.StubType = "" }, "no column stub"},
		{"a number stub", func(s *TableShape) { s.StubType = "int" }, "stub is int"},
		{"a stub not unique", func(s *TableShape) { s.StubUnique = false }, "no UNIQUE index"},
		{"a column needing a value", func(s *TableShape) { s.Needs = []string{"owner"} }, "owner needs a value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := flickr("TicketsPhotos")
			tt.mod(s)
			got := s.Shaped()
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("Shaped() = %q, want %q", got, tt.want)
			}
		})
	}
	if b := flickr("x").Bits(); b != 64 {
		t.Errorf("bigint: %d bits", b)
	}
}

func TestSimilarTables(t *testing.T) {
	shapes := map[string]*TableShape{
		"TicketsPhotos": flickr("TicketsPhotos"), "tickets_orders": flickr("tickets_orders"), "seq_users": flickr("seq_users"),
		"Tickets64": flickr("Tickets64"), "comments": flickr("comments"),
		"TicketsVideos": {Name: "TicketsVideos", Engine: "InnoDB"}, // not of Flickr's shape
	}
	for _, tt := range []struct{ name, want string }{
		{"photos", "TicketsPhotos"}, {"photo", "TicketsPhotos"}, {"orders", "tickets_orders"}, {"order", "tickets_orders"},
		{"users", "seq_users"}, {"comments", "comments"}, {"comment", "comments"},
		{"videos", ""}, {"invoices", ""}, {"tickets64", "Tickets64"}, {"photos_v2", ""},
	} {
		if got := strings.Join(SimilarTables(tt.name, shapes), ","); got != tt.want {
			t.Errorf("SimilarTables(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
