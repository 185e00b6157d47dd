package faultproxy

import (
	"net/http"
	"strings"
)

// RequestCounter counts the kintone requests a proxy forwards to the tenant, per app and
// method (internal/harness/apicount's Counter is one). kintone budgets requests per app and day, and
// FlowNet's and kSQL-Flow's requests are seen only here.
type RequestCounter interface {
	Add(app, method string, status int)
}

// countSent counts one request the proxy sent upstream, answered with status (0: no
// answer; it may still have reached the tenant). Blocked requests, requests a barrier
// failed and synthetic fault answers never left the proxy and are not counted.
func (p *Proxy) countSent(r *http.Request, app string, status int) {
	if p.opts.Counter == nil {
		return
	}
	if app == "" {
		app = p.appOfToken(r)
	}
	method := r.Method
	if o := r.Header.Get("X-HTTP-Method-Override"); o != "" && method == http.MethodPost {
		method = strings.ToUpper(o) // kintone runs it as the overriding method
	}
	p.opts.Counter.Add(app, method, status)
}

func (p *Proxy) appOfToken(r *http.Request) string {
	for _, v := range r.Header.Values("X-Cybozu-API-Token") {
		for _, tok := range strings.Split(v, ",") {
			if app, ok := p.opts.AppsByToken[strings.TrimSpace(tok)]; ok {
				return app
			}
		}
	}
	return ""
}
