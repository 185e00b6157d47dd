package emulator

// Query field kinds: what each field type is for the query language, and which operators
// kintone allows on it (a wrong one is GAIA_IQ03).

// qkind is a field kind for query purposes.
type qkind int

const (
	kID qkind = iota
	kRecNo
	kText
	kMText
	kNumber
	kDateTime // DATETIME, CREATED_TIME, UPDATED_TIME
	kDate
	kChoice // DROP_DOWN
	kCheck  // CHECK_BOX
	kFile
	kUser // CREATOR, MODIFIER
)

type qfield struct {
	code string
	kind qkind
	def  *FieldDef
	get  func(r *record) any
}

func (a *app) queryField(code string) (*qfield, bool) {
	switch code {
	case codeID:
		return &qfield{code: code, kind: kID}, true
	case codeRecordNo:
		return &qfield{code: code, kind: kRecNo}, true
	case codeCreatedAt:
		return &qfield{code: code, kind: kDateTime, get: func(r *record) any { return r.created }}, true
	case codeModifiedAt:
		return &qfield{code: code, kind: kDateTime, get: func(r *record) any { return r.updated }}, true
	case codeCreator, codeModifier:
		return &qfield{code: code, kind: kUser, get: func(*record) any { return adminCode }}, true
	}
	f := a.fields[code]
	if f == nil {
		return nil, false
	}
	// Schema types are checked on load (supportedTypes), so every user field has a kind.
	return &qfield{code: code, kind: kindByType[f.Type], def: f, get: func(r *record) any { return r.vals[code] }}, true
}

// kindByType is the query kind of each user field type.
var kindByType = map[string]qkind{
	"SINGLE_LINE_TEXT": kText, "MULTI_LINE_TEXT": kMText, "NUMBER": kNumber, "DATETIME": kDateTime,
	"DATE": kDate, "DROP_DOWN": kChoice, "CHECK_BOX": kCheck, "FILE": kFile,
}

var allowedOps = map[qkind][]string{
	kID:       {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kRecNo:    {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kUser:     {"in", "not in"},
	kDateTime: {"=", "!=", ">", "<", ">=", "<="},
	kText:     {"=", "!=", "in", "not in", "like", "not like"},
	kNumber:   {"=", "!=", ">", "<", ">=", "<=", "in", "not in"},
	kMText:    {"like", "not like", "is empty", "is not empty"},
	kChoice:   {"in", "not in"},
	kCheck:    {"in", "not in"},
	kFile:     {"like", "not like", "is empty", "is not empty"},
	kDate:     {"=", "!=", ">", "<", ">=", "<="},
}
