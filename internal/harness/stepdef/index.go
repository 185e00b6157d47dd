package stepdef

import (
	"fmt"
	"reflect"
	"regexp"
	"sync"
)

// Def is one step definition as registered: its regular expression and where its handler is.
type Def struct {
	Expr    string         // the regular expression as registered
	Re      *regexp.Regexp // compiled as godog compiles it
	Handler string         // the handler's function name (a method value's "-fm" wrapper resolved to the method)
	File    string         // source file of the handler ("" when unknown)
	Line    int
}

// Index records the step definitions registered through a Registry, in registration order,
// so that tooling (`flowtest steps`, internal/steps/index_test.go) can list and check them without
// running godog.
type Index struct {
	mu   sync.Mutex
	defs []Def
}

// Defs returns the recorded definitions in registration order.
func (x *Index) Defs() []Def {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Def(nil), x.defs...)
}

// Add records expr and fn. It panics on what godog's Step would refuse (an expression that is
// not a string, []byte or *regexp.Regexp, or does not compile; a handler that is not a func),
// so a recording registry fails where a real run would.
func (x *Index) Add(expr, fn any) {
	var re *regexp.Regexp
	switch e := expr.(type) {
	case *regexp.Regexp:
		re = e
	case string:
		re = compiled(e)
	case []byte:
		re = compiled(string(e))
	default:
		panic(fmt.Sprintf("stepdef: step expression is %T, want a *regexp.Regexp, string or []byte", expr))
	}
	if fn == nil || reflect.TypeOf(fn).Kind() != reflect.Func {
		panic(fmt.Sprintf("stepdef: handler for %q is %T, not a func", re.String(), fn))
	}
	name, file, line := funcPos(fn)
	x.mu.Lock()
	x.defs = append(x.defs, Def{Expr: re.String(), Re: re, Handler: name, File: file, Line: line})
	x.mu.Unlock()
}

// expressions caches compiled expressions: the runner indexes the step library again for
// every scenario (godog's suite per scenario), and a *regexp.Regexp is safe to share.
var expressions sync.Map

// compiled is expr compiled (panicking as regexp.MustCompile does), once per expression.
func compiled(expr string) *regexp.Regexp {
	if re, ok := expressions.Load(expr); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(expr)
	expressions.Store(expr, re)
	return re
}
