package kintoneapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddRecordSendsTokenAndStripsTypes(t *testing.T) {
	var got map[string]any
	var token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token = r.Header.Get("X-Cybozu-API-Token")
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		io.WriteString(w, `{"id":"5","revision":"1"}`)
	}))
	defer srv.Close()

	c := New(srv.URL, nil, map[string]string{"12": "tok-12"})
	id, rev, err := c.AddRecord(context.Background(), "12", Record{
		"name":      {Type: "SINGLE_LINE_TEXT", Value: "x"},
		"$revision": {Type: "__REVISION__", Value: "3"},
		"作成日時":      {Type: "CREATED_TIME", Value: "2026-01-01T00:00:00Z"},
	})
	require.NoError(t, err)
	assert.Equal(t, "5", id)
	assert.Equal(t, "1", rev)
	assert.Equal(t, "tok-12", token)
	assert.Equal(t, map[string]any{"app": "12", "record": map[string]any{"name": map[string]any{"value": "x"}}}, got)
}

func TestAPIErrorAndNetworkError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"code":"GAIA_CO02","id":"x","message":"revision mismatch"}`)
	}))
	c := New(srv.URL, nil, nil)
	_, err := c.UpdateRecord(context.Background(), "1", "2", Values(map[string]any{"a": "b"}), "1")
	require.Error(t, err)
	assert.True(t, IsCode(err, "GAIA_CO02"))
	assert.Equal(t, http.StatusConflict, StatusOf(err))
	assert.False(t, IsNetwork(err))
	srv.Close()

	_, err = c.UpdateRecord(context.Background(), "1", "2", Values(map[string]any{"a": "b"}), "1")
	require.Error(t, err)
	assert.True(t, IsNetwork(err), "a closed server is a network error: %v", err)
	assert.False(t, IsCode(err, "GAIA_CO02"))
}

// A connection dropped without a response (as the fault proxy's block mode does) must be a
// network error, never mistaken for an HTTP status.
func TestDroppedConnectionIsNetworkError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			conn.Read(buf)
			conn.Close()
		}
	}()
	c := New("http://"+ln.Addr().String(), nil, nil)
	_, err = c.GetRecord(context.Background(), "1", "1")
	require.Error(t, err)
	assert.True(t, IsNetwork(err))
}

func TestGetAllPagesByID(t *testing.T) {
	const total = 1203
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		queries = append(queries, q)
		// parse "... $id > N order by $id asc limit 500"
		i := strings.Index(q, "$id > ")
		rest := q[i+len("$id > "):]
		after, err := strconv.Atoi(strings.Fields(rest)[0])
		require.NoError(t, err)
		var recs []Record
		for id := after + 1; id <= total && len(recs) < 500; id++ {
			recs = append(recs, Record{"$id": {Type: "__ID__", Value: strconv.Itoa(id)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"records": recs})
	}))
	defer srv.Close()
	c := New(srv.URL, nil, nil)
	recs, err := c.GetAll(context.Background(), "3", `status = "RUNNING"`, []string{"status"})
	require.NoError(t, err)
	require.Len(t, recs, total)
	assert.Equal(t, "1203", recs[total-1].ID())
	require.Len(t, queries, 3)
	assert.Equal(t, `(status = "RUNNING") and $id > 0 order by $id asc limit 500`, queries[0])
	assert.Equal(t, `(status = "RUNNING") and $id > 1000 order by $id asc limit 500`, queries[2])
}

func TestRecordStr(t *testing.T) {
	r := Record{
		"s":  {Value: "a"},
		"n":  {Value: float64(12)},
		"cb": {Value: []any{"x", "y"}},
		"z":  {Value: nil},
	}
	assert.Equal(t, "a", r.Str("s"))
	assert.Equal(t, "12", r.Str("n"))
	assert.Equal(t, `["x","y"]`, r.Str("cb"))
	assert.Equal(t, "", r.Str("z"))
	assert.Equal(t, "", r.Str("missing"))
	assert.Equal(t, fmt.Sprint(""), r.ID())
}
