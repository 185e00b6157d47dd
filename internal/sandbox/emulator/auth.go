package emulator

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// API-token authentication: every token is bound to one app with a permission set.

type grant struct {
	a     *app
	perms map[string]bool
}

// makeTokens gives every permission set of every app a token (keeping loaded ones).
func (s *Server) makeTokens() {
	for _, a := range s.apps {
		sets := make([]string, 0, len(a.schema.Tokens))
		for set := range a.schema.Tokens {
			sets = append(sets, set)
		}
		sort.Strings(sets)
		for _, set := range sets {
			tok := a.tokens[set]
			if tok == "" {
				tok = randomID(40)
				a.tokens[set] = tok
			}
			perms := map[string]bool{}
			for _, p := range a.schema.Tokens[set] {
				perms[p] = true
			}
			s.grants[tok] = grant{a: a, perms: perms}
		}
	}
}

// tokenList reads X-Cybozu-API-Token: several comma-separated tokens and/or repeated headers.
func tokenList(h http.Header) []string {
	var out []string
	for _, v := range h.Values("X-Cybozu-API-Token") {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// resolveTokens checks every token sent: none -> CB_AU01; unknown -> GAIA_IA02; two for
// one app -> GAIA_DA03.
func (c *reqCtx) resolveTokens() (map[*app]grant, *apiError) {
	if len(c.tokens) == 0 {
		if c.r.Header.Get("X-Cybozu-Authorization") != "" {
			// Password authentication is not offered by the sandbox.
			return nil, &apiError{status: 401, code: "CB_WA01", message: "Password authentication failed."}
		}
		return nil, errNoLogin()
	}
	out := map[*app]grant{}
	for _, t := range c.tokens {
		g, ok := c.s.grants[t]
		if !ok {
			return nil, errBadToken()
		}
		if _, dup := out[g.a]; dup {
			return nil, errDupToken()
		}
		out[g.a] = g
	}
	if !c.counted {
		// A request counts once on every app whose token authenticated it (a bulk request,
		// or one sent with several apps' tokens, on each of them).
		c.counted = true
		for a := range out {
			c.s.daily.count(a.id(), a.schema.Role)
		}
	}
	return out, nil
}

// authApp authorises the request on the app named by raw (the "app" parameter): the app must
// exist, one of the tokens must belong to it (else GAIA_IA02, as real kintone answers a token
// generated for another app), and that token must carry every permission in all and at
// least one in anyOf (if given); else 403 GAIA_NO01.
func (c *reqCtx) authApp(raw any, key string, all []string, anyOf []string) (*app, *apiError) {
	grants, aerr := c.resolveTokens()
	if aerr != nil {
		return nil, aerr
	}
	id, ok := scalar(raw)
	if raw == nil || !ok || strings.TrimSpace(id) == "" {
		return nil, errField(key, msgRequiredPar)
	}
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < 1 {
		return nil, errField(key, "must be greater than or equal to 1")
	}
	a := c.s.byID[strings.TrimSpace(id)]
	if a == nil {
		return nil, errAppNotFound(id)
	}
	g, ok := grants[a]
	if !ok {
		return nil, errBadToken()
	}
	for _, p := range all {
		if !g.perms[p] {
			return nil, errNoPermission()
		}
	}
	if len(anyOf) > 0 {
		okAny := false
		for _, p := range anyOf {
			okAny = okAny || g.perms[p]
		}
		if !okAny {
			return nil, errNoPermission()
		}
	}
	if _, seen := c.arrival[a]; !seen {
		c.arrival[a] = a.modSeq.Load()
	}
	return a, nil
}
