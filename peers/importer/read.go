package importer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"ticketd/peers"
)

// Source is one of the peer's databases: Leaf has one; tinyid may have
// several (its datasource.tinyid.names), one per remainder of a biz type.
type Source struct {
	Addr     string // host:port
	User     string
	Password string // never logged, never in an error
	Database string
}

func (s Source) String() string { return fmt.Sprintf("%s@%s/%s", s.User, s.Addr, s.Database) }

// Row is one key as a peer's database holds it.
type Row struct {
	Key   string
	MaxID int64
	Step  int64
	// Delta and Remainder are tinyid's (1 and 0 for Leaf).
	Delta, Remainder int64
	From             string // the source, for messages
}

// TokenRow is one row of tinyid's tiny_id_token.
type TokenRow struct {
	ID      int64
	Token   string // the secret: only its digest leaves this package
	BizType string
}

// What the import reads: Leaf's and tinyid's own statements' columns.
const (
	selectLeaf   = "SELECT biz_tag, max_id, step FROM leaf_alloc"
	selectTinyID = "SELECT biz_type, max_id, IFNULL(step, 0), delta, remainder FROM tiny_id_info"
	selectTokens = "SELECT id, token, biz_type FROM tiny_id_token ORDER BY id"
)

// read reads the keys (and, for tinyid, the tokens) of one source, in a
// read-only transaction: one consistent view of the table.
func read(ctx context.Context, p peers.Peer, src Source, timeout time.Duration) ([]Row, []TokenRow, error) {
	mc := mysql.NewConfig()
	mc.Net, mc.Addr, mc.User, mc.Passwd, mc.DBName = "tcp", src.Addr, src.User, src.Password, src.Database
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = timeout, timeout, timeout
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", src, err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", src, err)
	}
	defer func() { _ = tx.Rollback() }()
	q := selectLeaf
	if p == peers.TinyID {
		q = selectTinyID
	}
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", src, err)
	}
	var out []Row
	for rows.Next() {
		r := Row{Delta: 1, From: src.String()}
		if p == peers.TinyID {
			err = rows.Scan(&r.Key, &r.MaxID, &r.Step, &r.Delta, &r.Remainder)
		} else {
			err = rows.Scan(&r.Key, &r.MaxID, &r.Step)
		}
		if err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("reading %s: %w", src, err)
		}
		out = append(out, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", src, err)
	}
	if p != peers.TinyID {
		return out, nil, nil
	}
	trows, err := tx.QueryContext(ctx, selectTokens)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", src, err)
	}
	var toks []TokenRow
	for trows.Next() {
		var tr TokenRow
		if err := trows.Scan(&tr.ID, &tr.Token, &tr.BizType); err != nil {
			trows.Close()
			return nil, nil, fmt.Errorf("reading %s: tiny_id_token: %w", src, err)
		}
		toks = append(toks, tr)
	}
	if err := errors.Join(trows.Err(), trows.Close()); err != nil {
		return nil, nil, fmt.Errorf("reading %s: tiny_id_token: %w", src, err)
	}
	return out, toks, nil
}
