package emulator

import (
	"strconv"
	"sync"
	"time"
)

// Cursor API: kintone allows 10 live cursors per domain, size 1..500 (default 100), no
// limit/offset in the query; a cursor disappears once read to the end or deleted. The
// matching record ids are fixed at creation; records are rendered as they are when read
// (a record deleted meanwhile is skipped). Idle cursors expire after 10 minutes (the
// commonly cited rule; kintone does not document it precisely).
type cursorStore struct {
	mu      sync.Mutex
	cursors map[string]*cursor
}

type cursor struct {
	a      *app
	ids    []int64
	fields map[string]bool
	size   int
	pos    int
	used   time.Time
}

const (
	maxCursors    = 10
	cursorIdleTTL = 10 * time.Minute
)

func newCursorStore() *cursorStore { return &cursorStore{cursors: map[string]*cursor{}} }

func (s *Server) createCursor(c *reqCtx) (any, *apiError) {
	a, fields, q, aerr := c.searchParams()
	if aerr != nil {
		return nil, aerr
	}
	size := int64(100)
	if v := c.params["size"]; v != nil {
		n, ok := paramInt(v)
		if !ok {
			return nil, errJSON()
		}
		if n < 1 || n > 500 {
			return nil, errField("size", "must be between 1 and 500")
		}
		size = n
	}
	if q.hasLimit || q.hasOff {
		return nil, errField("query", "limit and offset cannot be specified in the query of a cursor.")
	}
	q.limit = int(^uint(0) >> 1)
	if aerr := c.delay(a.latency); aerr != nil {
		return nil, aerr
	}
	a.mu.RLock()
	page, total := q.run(a)
	ids := make([]int64, len(page))
	for i, r := range page {
		ids[i] = r.id
	}
	a.mu.RUnlock()

	now := s.now()
	s.cursors.mu.Lock()
	defer s.cursors.mu.Unlock()
	for id, cur := range s.cursors.cursors {
		if now.Sub(cur.used) > cursorIdleTTL {
			delete(s.cursors.cursors, id)
		}
	}
	if len(s.cursors.cursors) >= maxCursors {
		return nil, &apiError{status: 400, code: "GAIA_TM12", message: "The number of cursors that can be created has reached the limit. Delete cursors that are no longer needed."}
	}
	id := newUUID()
	s.cursors.cursors[id] = &cursor{a: a, ids: ids, fields: fields, size: int(size), used: now}
	return map[string]string{"id": id, "totalCount": strconv.Itoa(total)}, nil
}

// cursorFor finds a cursor and checks the request may read its app.
func (s *Server) cursorFor(c *reqCtx) (string, *cursor, *apiError) {
	grants, aerr := c.resolveTokens()
	if aerr != nil {
		return "", nil, aerr
	}
	id, _ := scalar(c.params["id"])
	if id == "" {
		return "", nil, errField("id", msgRequiredPar)
	}
	s.cursors.mu.Lock()
	cur := s.cursors.cursors[id]
	s.cursors.mu.Unlock()
	if cur == nil || s.now().Sub(cur.used) > cursorIdleTTL {
		return "", nil, &apiError{status: 404, code: "GAIA_CU01", message: "The specified cursor does not exist."}
	}
	g, ok := grants[cur.a]
	if !ok {
		return "", nil, errBadToken()
	}
	if !g.perms[permView] {
		return "", nil, errNoPermission()
	}
	return id, cur, nil
}

func (s *Server) getCursor(c *reqCtx) (any, *apiError) {
	id, cur, aerr := s.cursorFor(c)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := c.delay(cur.a.latency); aerr != nil {
		return nil, aerr
	}
	s.cursors.mu.Lock()
	start := cur.pos
	end := min(start+cur.size, len(cur.ids))
	cur.pos = end
	cur.used = s.now()
	next := end < len(cur.ids)
	if !next {
		delete(s.cursors.cursors, id)
	}
	s.cursors.mu.Unlock()

	a := cur.a
	a.mu.RLock()
	recs := make([]map[string]fieldOut, 0, end-start)
	for _, rid := range cur.ids[start:end] {
		if r := a.records[rid]; r != nil {
			recs = append(recs, a.render(r, cur.fields))
		}
	}
	a.mu.RUnlock()
	return map[string]any{"records": recs, "next": next}, nil
}

func (s *Server) deleteCursor(c *reqCtx) (any, *apiError) {
	id, _, aerr := s.cursorFor(c)
	if aerr != nil {
		return nil, aerr
	}
	s.cursors.mu.Lock()
	delete(s.cursors.cursors, id)
	s.cursors.mu.Unlock()
	return map[string]any{}, nil
}
