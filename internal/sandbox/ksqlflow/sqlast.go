package ksqlflow

// The syntax tree of a parsed job file (sqlparse.go, sqlquery.go build it; sqleval.go runs it).

// Script is one parsed job file.
type Script struct {
	Header Header
	Stmts  []Stmt
}

// Header is the `-- @ksql key: value` block at the top of a job file.
type Header struct {
	Name       string
	TimeoutSec *int
	Dialect    int
	DependsOn  []string
	NamePos    Pos
}

// Stmt is one statement: *SelectStmt, *CreateTempStmt or *AssertStmt.
type Stmt interface{ StmtPos() Pos }

// SelectStmt is a top-level read whose rows are counted and discarded.
type SelectStmt struct {
	Pos   Pos
	Query *Query
}

// CreateTempStmt is CREATE TEMP TABLE #name AS <query>.
type CreateTempStmt struct {
	Pos   Pos
	Name  string
	Query *Query
}

// AssertStmt is ASSERT <scalar> <op> <scalar>, '<message>'.
type AssertStmt struct {
	Pos         Pos
	Left, Right Scalar
	Op          string
	Message     string
}

// ImportStmt is IMPORT INTO LAPP_<app> FROM CSV '<input>' ENCODING <UTF8|SJIS> BY NAME
// ON DUPLICATE (<key>) OVERWRITE ON ERROR SKIP INTO #<err> (csvimport.go).
type ImportStmt struct {
	Pos      Pos
	App      string // logical app (after LAPP_)
	AppPos   Pos
	Input    string // --import-csv name
	Encoding string // utf8 | sjis
	Key      string // ON DUPLICATE key field
	ErrTable string // ON ERROR SKIP INTO #name
}

func (s *ImportStmt) StmtPos() Pos { return s.Pos }

func (s *SelectStmt) StmtPos() Pos     { return s.Pos }
func (s *CreateTempStmt) StmtPos() Pos { return s.Pos }
func (s *AssertStmt) StmtPos() Pos     { return s.Pos }

// Query is one SELECT or several joined by UNION ALL.
type Query struct{ Arms []*Select }

// Select is one SELECT … FROM … [WHERE …].
type Select struct {
	Pos   Pos
	Items []SelItem
	From  Source
	Where Expr // nil when absent
}

// Item kinds.
const (
	itemField = iota
	itemCount
	itemSum
	itemLiteral // a constant column: SELECT 1
)

// SelItem is one select-list entry.
type SelItem struct {
	Kind  int
	Field string // field code for itemField/itemSum
	Lit   string // value of itemLiteral
	Alias string // output column name
	Pos   Pos
}

// Source is LAPP_<logical> or #temp; None marks a FROM-less SELECT of constants.
type Source struct {
	None bool
	Temp bool
	Name string // logical app name (without LAPP_) or temp name (without #)
	Pos  Pos
}

// Expr is a WHERE condition: *CmpExpr, *InExpr, *BoolExpr.
type Expr interface{ exprNode() }

// CmpExpr is <field> <op> <literal>.
type CmpExpr struct {
	Field string
	Op    string
	Value Literal
	Pos   Pos
}

// InExpr is <field> [NOT] IN (<literal>, …).
type InExpr struct {
	Field  string
	Not    bool
	Values []Literal
	Pos    Pos
}

// BoolExpr is AND/OR of two conditions.
type BoolExpr struct {
	Op   string // "and" | "or"
	L, R Expr
}

func (*CmpExpr) exprNode()  {}
func (*InExpr) exprNode()   {}
func (*BoolExpr) exprNode() {}

// Literal is a number, a string, or a date function resolved at run time against --as-of.
type Literal struct {
	IsNum bool
	Text  string // number text or string value
	Func  string // MONTH_START / NEXT_MONTH_START when set
	Pos   Pos
}

// Scalar is one side of an ASSERT: a literal or a parenthesised scalar subquery.
type Scalar struct {
	Lit   *Literal
	Query *Query
}
