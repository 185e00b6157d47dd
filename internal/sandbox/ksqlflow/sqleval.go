package ksqlflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Table is an in-memory result: ordered columns, rows of kintone-style string values
// ("" is null, as kintone encodes an empty field).
type Table struct {
	Cols []string
	Rows [][]string
}

// Row is one source row: field code -> value, and whether the field exists.
type Row func(field string) (string, bool)

// AppReader reads every record of a logical app, returning only the given fields. The
// kintone implementation pages through the REST API; tests use in-memory rows.
type AppReader interface {
	ReadApp(ctx context.Context, logical string, fields []string) ([]map[string]string, error)
}

// AssertError is a violated ASSERT (resultCode ASSERT_FAILED).
type AssertError struct {
	Pos         Pos
	Message     string
	Left, Right string
	Op          string
}

func (e *AssertError) Error() string {
	return fmt.Sprintf("ASSERT failed at line %d: %s (%s %s %s is false)", e.Pos.Line, e.Message, nullText(e.Left), e.Op, nullText(e.Right))
}

func nullText(s string) string {
	if s == "" {
		return "NULL"
	}
	return s
}

// SQLError is a run-time SQL failure (resultCode SQL_ERROR).
type SQLError struct {
	Pos Pos
	Msg string
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// errCancelled is returned when the stop check at a statement boundary reports a signal.
var errCancelled = errors.New("cancelled by signal at a statement boundary")

// Engine executes a checked Script.
type Engine struct {
	Reader      AppReader
	AsOf        time.Time      // @MONTH_START() etc. are computed from it
	Loc         *time.Location // profile timezone for those functions
	MaxReadRows int            // 0 = unlimited
	MaxTempRows int            // 0 = unlimited
	// Boundary is called before every statement; a non-nil error stops the job there.
	Boundary func(stmtIndex int) error
	// Import runs an IMPORT statement (csvimport.go) and returns its error-rows table.
	Import func(ctx context.Context, s *ImportStmt) (*Table, error)

	temps    map[string]*Table
	ReadRows int // rows read from kintone apps so far
	TempRows int
}

// Run executes the statements in order.
func (e *Engine) Run(ctx context.Context, sc *Script) error {
	e.temps = map[string]*Table{}
	for i, st := range sc.Stmts {
		if e.Boundary != nil {
			if err := e.Boundary(i); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.stmt(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) stmt(ctx context.Context, st Stmt) error {
	switch s := st.(type) {
	case *SelectStmt:
		_, err := e.query(ctx, s.Query)
		return err
	case *CreateTempStmt:
		t, err := e.query(ctx, s.Query)
		if err != nil {
			return err
		}
		e.TempRows += len(t.Rows)
		if e.MaxTempRows > 0 && e.TempRows > e.MaxTempRows {
			return &SQLError{s.Pos, fmt.Sprintf("temp tables hold %d rows, more than maxTempRows %d", e.TempRows, e.MaxTempRows)}
		}
		e.temps[s.Name] = t
		return nil
	case *ImportStmt:
		if e.Import == nil {
			return &SQLError{s.Pos, "IMPORT needs an --import-csv input"}
		}
		t, err := e.Import(ctx, s)
		if err != nil {
			return err
		}
		e.temps[s.ErrTable] = t
		return nil
	case *AssertStmt:
		l, err := e.scalar(ctx, s.Left)
		if err != nil {
			return err
		}
		r, err := e.scalar(ctx, s.Right)
		if err != nil {
			return err
		}
		ok, err := compareValues(l, s.Op, r)
		if err != nil {
			return &SQLError{s.Pos, err.Error()}
		}
		if !ok {
			return &AssertError{Pos: s.Pos, Message: s.Message, Left: l, Right: r, Op: s.Op}
		}
		return nil
	}
	return fmt.Errorf("internal: unknown statement %T", st)
}

func (e *Engine) scalar(ctx context.Context, s Scalar) (string, error) {
	if s.Lit != nil {
		return e.literal(*s.Lit), nil
	}
	t, err := e.query(ctx, s.Query)
	if err != nil {
		return "", err
	}
	pos := s.Query.Arms[0].Pos
	if len(t.Cols) != 1 {
		return "", &SQLError{pos, fmt.Sprintf("a scalar subquery must return one column, got %d", len(t.Cols))}
	}
	switch len(t.Rows) {
	case 0:
		return "", nil // NULL: every comparison with it is false
	case 1:
		return t.Rows[0][0], nil
	}
	return "", &SQLError{pos, fmt.Sprintf("a scalar subquery must return at most one row, got %d", len(t.Rows))}
}

func (e *Engine) literal(l Literal) string {
	if l.Func == "" {
		return l.Text
	}
	loc := e.Loc
	if loc == nil {
		loc = time.UTC
	}
	t := e.AsOf.In(loc)
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
	if l.Func == "NEXT_MONTH_START" {
		first = first.AddDate(0, 1, 0)
	}
	return first.Format("2006-01-02")
}

func (e *Engine) query(ctx context.Context, q *Query) (*Table, error) {
	var out *Table
	for _, arm := range q.Arms {
		t, err := e.selectArm(ctx, arm)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = t
			continue
		}
		out.Rows = append(out.Rows, t.Rows...)
	}
	return out, nil
}

// selectArm runs one SELECT of a query: its source's rows, filtered by WHERE, then either
// one aggregate row (COUNT/SUM) or one row per kept row.
func (e *Engine) selectArm(ctx context.Context, s *Select) (*Table, error) {
	rows, err := e.sourceRows(ctx, s)
	if err != nil {
		return nil, err
	}
	var kept []Row
	for _, r := range rows {
		ok, err := e.match(s.Where, r, s.From)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, r)
		}
	}
	t := &Table{}
	for _, it := range s.Items {
		t.Cols = append(t.Cols, it.Alias)
	}
	if k := s.Items[0].Kind; k == itemCount || k == itemSum {
		row, err := aggregateRow(s, kept)
		if err != nil {
			return nil, err
		}
		t.Rows = [][]string{row}
		return t, nil
	}
	for _, r := range kept {
		row := make([]string, len(s.Items))
		for i, it := range s.Items {
			if it.Kind == itemLiteral {
				row[i] = it.Lit
				continue
			}
			v, ok := r(it.Field)
			if !ok {
				return nil, unknownField(it.Field, s.From, it.Pos)
			}
			row[i] = v
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// sourceRows are the rows of a SELECT's source: one empty row without FROM, a temp
// table's rows, or an app's records (counted against maxReadRows).
func (e *Engine) sourceRows(ctx context.Context, s *Select) ([]Row, error) {
	var rows []Row
	if s.From.None {
		rows = []Row{func(string) (string, bool) { return "", false }}
	} else if s.From.Temp {
		t, ok := e.temps[s.From.Name]
		if !ok {
			return nil, &SQLError{s.From.Pos, fmt.Sprintf("temp table #%s does not exist", s.From.Name)}
		}
		idx := make(map[string]int, len(t.Cols))
		for i, c := range t.Cols {
			idx[c] = i
		}
		for _, r := range t.Rows {
			r := r
			rows = append(rows, func(f string) (string, bool) {
				i, ok := idx[f]
				if !ok {
					return "", false
				}
				return r[i], true
			})
		}
	} else {
		recs, err := e.Reader.ReadApp(ctx, s.From.Name, armFields(s))
		if err != nil {
			return nil, err
		}
		e.ReadRows += len(recs)
		if e.MaxReadRows > 0 && e.ReadRows > e.MaxReadRows {
			return nil, &SQLError{s.From.Pos, fmt.Sprintf("%d rows read, more than maxReadRows %d", e.ReadRows, e.MaxReadRows)}
		}
		for _, m := range recs {
			m := m
			rows = append(rows, func(f string) (string, bool) { v, ok := m[f]; return v, ok })
		}
	}
	return rows, nil
}

// aggregateRow is the one row of an aggregate SELECT: COUNT(*) of the kept rows, or the
// SUM of a field over them (empty values skipped).
func aggregateRow(s *Select, kept []Row) ([]string, error) {
	row := make([]string, len(s.Items))
	for i, it := range s.Items {
		if it.Kind == itemCount {
			row[i] = strconv.Itoa(len(kept))
			continue
		}
		sum := 0.0
		for _, r := range kept {
			v, ok := r(it.Field)
			if !ok {
				return nil, unknownField(it.Field, s.From, it.Pos)
			}
			if v == "" {
				continue
			}
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, &SQLError{it.Pos, fmt.Sprintf("SUM(%s): value %q is not a number", it.Field, v)}
			}
			sum += n
		}
		row[i] = strconv.FormatFloat(sum, 'f', -1, 64)
	}
	return row, nil
}

func unknownField(f string, src Source, pos Pos) error {
	name := "LAPP_" + src.Name
	if src.Temp {
		name = "#" + src.Name
	}
	return &SQLError{pos, fmt.Sprintf("field %q does not exist in %s", f, name)}
}

func (e *Engine) match(x Expr, r Row, src Source) (bool, error) {
	switch c := x.(type) {
	case nil:
		return true, nil
	case *BoolExpr:
		l, err := e.match(c.L, r, src)
		if err != nil {
			return false, err
		}
		if c.Op == "and" && !l {
			return false, nil
		}
		if c.Op == "or" && l {
			return true, nil
		}
		return e.match(c.R, r, src)
	case *CmpExpr:
		v, ok := r(c.Field)
		if !ok {
			return false, unknownField(c.Field, src, c.Pos)
		}
		res, err := compareField(v, c.Op, c.Value, e.literal(c.Value))
		if err != nil {
			return false, &SQLError{c.Pos, fmt.Sprintf("%s: %v", c.Field, err)}
		}
		return res, nil
	case *InExpr:
		v, ok := r(c.Field)
		if !ok {
			return false, unknownField(c.Field, src, c.Pos)
		}
		found := false
		for _, lit := range c.Values {
			eq, err := compareField(v, "=", lit, e.literal(lit))
			if err != nil {
				return false, &SQLError{c.Pos, fmt.Sprintf("%s: %v", c.Field, err)}
			}
			if eq {
				found = true
				break
			}
		}
		return found != c.Not, nil
	}
	return false, fmt.Errorf("internal: unknown condition %T", x)
}

// compareField compares a field value with a literal. A number literal compares
// numerically (an empty field is null and matches nothing); a string or date literal
// compares as text, which orders kintone's DATE (YYYY-MM-DD) and UTC DATETIME values.
func compareField(v, op string, lit Literal, litText string) (bool, error) {
	if lit.IsNum {
		if v == "" {
			return false, nil
		}
		a, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return false, fmt.Errorf("value %q is not a number", v)
		}
		b, _ := strconv.ParseFloat(litText, 64)
		return cmpOrdered(a, b, op), nil
	}
	return cmpOrdered(v, litText, op), nil
}

// compareValues is the ASSERT comparison: numeric when both sides are numbers, text
// otherwise; NULL ("") on either side makes it false, as in SQL.
func compareValues(l, op, r string) (bool, error) {
	if l == "" || r == "" {
		return false, nil
	}
	a, errA := strconv.ParseFloat(l, 64)
	b, errB := strconv.ParseFloat(r, 64)
	if errA == nil && errB == nil {
		return cmpOrdered(a, b, op), nil
	}
	return cmpOrdered(l, r, op), nil
}

func cmpOrdered[T float64 | string](a, b T, op string) bool {
	switch op {
	case "=":
		return a == b
	case "!=":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	case ">=":
		return a >= b
	}
	return false
}

// armFields lists the field codes one SELECT arm needs from its app (at least $id, so that
// COUNT(*) still asks kintone for a minimal column).
func armFields(s *Select) []string {
	set := map[string]bool{"$id": true}
	for _, f := range armFieldsNoID(s) {
		set[f.name] = true
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// CheckScript does the static checks that need the profile: every LAPP_ name is a logical
// app of the profile, every #temp is created before it is read and only once, every column
// read from a temp table exists, and UNION ALL arms have the same arity. A nil apps map
// skips the app check (inspect without a profile).
func CheckScript(sc *Script, apps map[string]string) error {
	temps := map[string][]string{}
	var checkQuery func(q *Query) ([]string, error)
	checkQuery = func(q *Query) ([]string, error) {
		var cols []string
		for i, s := range q.Arms {
			if s.From.None {
				// constants only: nothing to resolve
			} else if s.From.Temp {
				tc, ok := temps[s.From.Name]
				if !ok {
					return nil, &SyntaxError{s.From.Pos, diagUnknownTemp, fmt.Sprintf("temp table #%s is read before it is created", s.From.Name)}
				}
				for _, f := range armFieldsNoID(s) {
					if !slices.Contains(tc, f.name) {
						return nil, &SyntaxError{f.pos, diagColumn, fmt.Sprintf("temp table #%s has no column %q (columns: %v)", s.From.Name, f.name, tc)}
					}
				}
			} else if apps != nil {
				if _, ok := apps[s.From.Name]; !ok {
					return nil, &SyntaxError{s.From.Pos, diagUnknownApp, fmt.Sprintf("LAPP_%s is not a logical app of the profile", s.From.Name)}
				}
			}
			var armCols []string
			for _, it := range s.Items {
				armCols = append(armCols, it.Alias)
			}
			if i == 0 {
				cols = armCols
			} else if len(armCols) != len(cols) {
				return nil, &SyntaxError{s.Pos, diagColumn, fmt.Sprintf("UNION ALL arm has %d columns, the first arm has %d", len(armCols), len(cols))}
			}
		}
		return cols, nil
	}
	for _, st := range sc.Stmts {
		switch s := st.(type) {
		case *SelectStmt:
			if _, err := checkQuery(s.Query); err != nil {
				return err
			}
		case *CreateTempStmt:
			cols, err := checkQuery(s.Query)
			if err != nil {
				return err
			}
			if _, dup := temps[s.Name]; dup {
				return &SyntaxError{s.Pos, diagUnknownTemp, fmt.Sprintf("temp table #%s is created twice", s.Name)}
			}
			temps[s.Name] = cols
		case *ImportStmt:
			if apps != nil {
				if _, ok := apps[s.App]; !ok {
					return &SyntaxError{s.AppPos, diagUnknownApp, fmt.Sprintf("LAPP_%s is not a logical app of the profile", s.App)}
				}
			}
			if _, dup := temps[s.ErrTable]; dup {
				return &SyntaxError{s.Pos, diagUnknownTemp, fmt.Sprintf("temp table #%s is created twice", s.ErrTable)}
			}
			temps[s.ErrTable] = []string{"row_no", "error_code"}
		case *AssertStmt:
			for _, side := range []Scalar{s.Left, s.Right} {
				if side.Query == nil {
					continue
				}
				cols, err := checkQuery(side.Query)
				if err != nil {
					return err
				}
				if len(cols) != 1 {
					return &SyntaxError{side.Query.Arms[0].Pos, diagColumn, fmt.Sprintf("an ASSERT subquery must select one column, it selects %d", len(cols))}
				}
			}
		}
	}
	return nil
}

type fieldRef struct {
	name string
	pos  Pos
}

// armFieldsNoID lists the field references of one SELECT arm with their positions (items,
// then WHERE, repeats kept): what the static checks report on and what armFields reads.
func armFieldsNoID(s *Select) []fieldRef {
	var out []fieldRef
	for _, it := range s.Items {
		if it.Field != "" {
			out = append(out, fieldRef{it.Field, it.Pos})
		}
	}
	var walk func(Expr)
	walk = func(x Expr) {
		switch c := x.(type) {
		case *BoolExpr:
			walk(c.L)
			walk(c.R)
		case *CmpExpr:
			out = append(out, fieldRef{c.Field, c.Pos})
		case *InExpr:
			out = append(out, fieldRef{c.Field, c.Pos})
		}
	}
	walk(s.Where)
	return out
}
