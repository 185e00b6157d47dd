package results

import (
	"reflect"
	"testing"
	"time"

	"github.com/ksqlflow/flowtest/internal/results/redact"
	"github.com/stretchr/testify/assert"
)

// Every string anywhere in a Scenario or Run must pass through redaction, including fields
// added later: fill all of them with the secret by reflection and look for it.
func TestRedactStructCopiesCoverEveryStringField(t *testing.T) {
	secret := "reflect-secret-9876"
	r := redact.New(map[string]string{"R_TOKEN": secret}, nil)
	a := &Archive{red: r, names: map[string]bool{}}
	var s Scenario
	fillStrings(reflect.ValueOf(&s).Elem(), secret)
	red := a.redactScenario(&s)
	assertNoString(t, reflect.ValueOf(red).Elem(), secret, "Scenario")
	var run Run
	fillStrings(reflect.ValueOf(&run).Elem(), secret)
	assertNoString(t, reflect.ValueOf(redactRun(r, &run)).Elem(), secret, "Run")
}

func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x " + s + " y")
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).CanSet() {
				fillStrings(v.Field(i), s)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fillStrings(v.Index(i), s)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		fillStrings(k, s)
		fillStrings(e, s)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillStrings(v.Elem(), s)
	}
}

func assertNoString(t *testing.T, v reflect.Value, s, path string) {
	switch v.Kind() {
	case reflect.String:
		assert.NotContains(t, v.String(), s, path)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				assertNoString(t, v.Field(i), s, path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			assertNoString(t, v.Index(i), s, path+"[]")
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			assertNoString(t, k, s, path+"{key}")
			assertNoString(t, v.MapIndex(k), s, path+"{}")
		}
	case reflect.Pointer:
		if !v.IsNil() {
			assertNoString(t, v.Elem(), s, path)
		}
	}
}
