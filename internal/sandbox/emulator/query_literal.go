package emulator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query literals: values checked against the field kind; date and datetime values and
// date functions expanded to [lo, hi) ranges.

// jst is the user time zone of token requests (fixed offset: Japan has no DST).
var jst = time.FixedZone("JST", 9*3600)

// resolveLiteral checks a literal against the field kind and expands date values to ranges.
func resolveLiteral(f *qfield, l *literal, now time.Time) *apiError {
	if l.function != "" {
		switch f.kind {
		case kUser:
			if l.function != "LOGINUSER" || len(l.args) != 0 {
				return errBadFunction()
			}
			l.s = adminCode
			return nil
		case kDateTime, kDate:
			lo, hi, aerr := dateFunction(l.function, l.args, now, f.kind == kDate)
			if aerr != nil {
				return aerr
			}
			l.isRange, l.lo, l.hi = true, lo, hi
			return nil
		}
		return errQuerySyntax()
	}
	switch f.kind {
	case kDateTime:
		if l.s == "" {
			return nil
		}
		if m := reDateOnly.FindStringSubmatch(l.s); m != nil {
			d, err := time.ParseInLocation("2006-1-2", l.s, jst)
			if err != nil {
				return errQuerySyntax()
			}
			l.isRange = true
			l.lo = d.UTC().Format(datetimeLayout)
			l.hi = d.AddDate(0, 0, 1).UTC().Format(datetimeLayout)
			return nil
		}
		t, ok := parseDateTime(l.s)
		if !ok {
			return errQuerySyntax()
		}
		l.isRange = true
		l.lo = t.Format(datetimeLayout)
		l.hi = t.Add(time.Minute).Format(datetimeLayout)
	case kDate:
		if l.s == "" {
			return nil
		}
		d, ok := normalizeDate(l.s)
		if !ok {
			return errQuerySyntax()
		}
		t, _ := time.Parse("2006-01-02", d)
		l.isRange, l.lo, l.hi = true, d, t.AddDate(0, 0, 1).Format("2006-01-02")
	case kChoice, kCheck:
		if l.s != "" && !slices.Contains(f.def.Options, l.s) {
			return errQuery("GAIA_IQ10", fmt.Sprintf("The value (%s) specified for the field (code: %s) is not one of the options.", l.s, f.code))
		}
	case kNumber, kID, kRecNo:
		if l.s == "" && (f.kind == kNumber) {
			return nil
		}
		if _, err := strconv.ParseFloat(l.s, 64); err != nil {
			return errQuerySyntax()
		}
	}
	return nil
}

// dateFunction expands a kintone date function into a [lo, hi) range in the stored layout.
func dateFunction(name string, args []string, now time.Time, dateOnly bool) (string, string, *apiError) {
	day := func(t time.Time) time.Time { y, m, d := t.In(jst).Date(); return time.Date(y, m, d, 0, 0, 0, 0, jst) }
	var lo, hi time.Time
	today := day(now)
	switch name {
	case "NOW":
		if dateOnly || len(args) != 0 {
			return "", "", errBadFunction()
		}
		t := now.UTC().Truncate(time.Minute)
		return t.Format(datetimeLayout), t.Add(time.Minute).Format(datetimeLayout), nil
	case "TODAY", "YESTERDAY", "TOMORROW":
		if len(args) != 0 {
			return "", "", errBadFunction()
		}
		lo = today.AddDate(0, 0, map[string]int{"TODAY": 0, "YESTERDAY": -1, "TOMORROW": 1}[name])
		hi = lo.AddDate(0, 0, 1)
	case "FROM_TODAY":
		var e *apiError
		if lo, hi, e = fromToday(today, args); e != nil {
			return "", "", e
		}
	case "THIS_MONTH", "LAST_MONTH", "NEXT_MONTH":
		var e *apiError
		if lo, hi, e = monthRange(name, today, args); e != nil {
			return "", "", e
		}
	case "THIS_YEAR", "LAST_YEAR", "NEXT_YEAR":
		if len(args) != 0 {
			return "", "", errBadFunction()
		}
		off := map[string]int{"THIS_YEAR": 0, "LAST_YEAR": -1, "NEXT_YEAR": 1}[name]
		lo = time.Date(today.Year()+off, 1, 1, 0, 0, 0, 0, jst)
		hi = lo.AddDate(1, 0, 0)
	case "THIS_WEEK", "LAST_WEEK", "NEXT_WEEK":
		var e *apiError
		if lo, hi, e = weekRange(name, today, args); e != nil {
			return "", "", e
		}
	default:
		return "", "", errQuery("GAIA_IL08", fmt.Sprintf("The function (%s) is invalid.", name))
	}
	if dateOnly {
		return lo.Format("2006-01-02"), hi.Format("2006-01-02"), nil
	}
	return lo.UTC().Format(datetimeLayout), hi.UTC().Format(datetimeLayout), nil
}

// fromToday is FROM_TODAY(n, unit): the day n days, weeks, months or years from today.
func fromToday(today time.Time, args []string) (lo, hi time.Time, e *apiError) {
	if len(args) != 2 {
		return time.Time{}, time.Time{}, errBadFunction()
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return time.Time{}, time.Time{}, errBadArgument()
	}
	switch strings.ToUpper(args[1]) {
	case "DAYS":
		lo = today.AddDate(0, 0, n)
	case "WEEKS":
		lo = today.AddDate(0, 0, 7*n)
	case "MONTHS":
		lo = today.AddDate(0, n, 0)
	case "YEARS":
		lo = today.AddDate(n, 0, 0)
	default:
		return time.Time{}, time.Time{}, errQuery("GAIA_IQ25", "The unit of the function is invalid.")
	}
	hi = lo.AddDate(0, 0, 1)
	return lo, hi, nil
}

// monthRange is THIS_MONTH, LAST_MONTH or NEXT_MONTH: the month, or with an argument
// (a day number, clamped to the month's length, or LAST) one day of it.
func monthRange(name string, today time.Time, args []string) (lo, hi time.Time, e *apiError) {
	if len(args) > 1 {
		return time.Time{}, time.Time{}, errBadFunction()
	}
	off := map[string]int{"THIS_MONTH": 0, "LAST_MONTH": -1, "NEXT_MONTH": 1}[name]
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, jst).AddDate(0, off, 0)
	lo, hi = first, first.AddDate(0, 1, 0)
	if len(args) == 1 {
		last := hi.AddDate(0, 0, -1).Day()
		var d int
		if strings.EqualFold(args[0], "LAST") {
			d = last
		} else if v, err := strconv.Atoi(args[0]); err == nil && v >= 1 && v <= 31 {
			d = min(v, last)
		} else {
			return time.Time{}, time.Time{}, errBadArgument()
		}
		lo = first.AddDate(0, 0, d-1)
		hi = lo.AddDate(0, 0, 1)
	}
	return lo, hi, nil
}

// weekRange is THIS_WEEK, LAST_WEEK or NEXT_WEEK: the week from Sunday, or with a weekday
// argument that one day of it.
func weekRange(name string, today time.Time, args []string) (lo, hi time.Time, e *apiError) {
	off := map[string]int{"THIS_WEEK": 0, "LAST_WEEK": -7, "NEXT_WEEK": 7}[name]
	sunday := today.AddDate(0, 0, -int(today.Weekday())+off)
	lo, hi = sunday, sunday.AddDate(0, 0, 7)
	if len(args) == 1 {
		wd := -1
		for i, n := range []string{"SUNDAY", "MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY"} {
			if strings.EqualFold(args[0], n) {
				wd = i
			}
		}
		if wd < 0 {
			return time.Time{}, time.Time{}, errBadArgument()
		}
		lo = sunday.AddDate(0, 0, wd)
		hi = lo.AddDate(0, 0, 1)
	} else if len(args) > 1 {
		return time.Time{}, time.Time{}, errBadFunction()
	}
	return lo, hi, nil
}

// errBadFunction is GAIA_IL08: an unknown function, or one called with the wrong arity.
func errBadFunction() *apiError { return errQuery("GAIA_IL08", "The function is invalid.") }

// errBadArgument is GAIA_IQ23: a function argument of the right arity but a bad value.
func errBadArgument() *apiError {
	return errQuery("GAIA_IQ23", "The argument of the function is invalid.")
}
