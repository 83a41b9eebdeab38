package envconfig

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		value   string // of variable V
		read    func(*Reader) any
		want    any
		problem string // reason reported for V, "" for none
	}{
		{"required", " t ", func(r *Reader) any { return r.Required("V") }, "t", ""},
		{"required unset", "", func(r *Reader) any { return r.Required("V") }, "", "required"},
		{"string", "x", func(r *Reader) any { return r.String("V", "d") }, "x", ""},
		{"string unset", " ", func(r *Reader) any { return r.String("V", "d") }, "d", ""},
		{"list", " a, ,b ", func(r *Reader) any { return r.List("V") }, []string{"a", "b"}, ""},
		{"list unset", "", func(r *Reader) any { return r.List("V") }, []string(nil), ""},
		{"duration", "90s", func(r *Reader) any { return r.Duration("V", time.Hour) }, 90 * time.Second, ""},
		{"duration unset", "", func(r *Reader) any { return r.Duration("V", time.Hour) }, time.Hour, ""},
		{"duration zero", "0s", func(r *Reader) any { return r.Duration("V", time.Hour) }, time.Hour,
			`"0s" is not a positive Go duration such as 90s or 168h`},
		{"int", "0", func(r *Reader) any { return r.Int("V", 7, 0) }, 0, ""},
		{"int unset", "", func(r *Reader) any { return r.Int("V", 7, 0) }, 7, ""},
		{"int below min", "0", func(r *Reader) any { return r.Int("V", 7, 1) }, 7, `"0" is not an integer >= 1`},
		{"int not a number", "x", func(r *Reader) any { return r.Int("V", 7, 1) }, 7, `"x" is not an integer >= 1`},
		{"bool", "true", func(r *Reader) any { return r.Bool("V") }, true, ""},
		{"bool unset", "", func(r *Reader) any { return r.Bool("V") }, false, ""},
		{"bool bad", "maybe", func(r *Reader) any { return r.Bool("V") }, false, `"maybe" is not a boolean (true or false)`},
		{"level", "debug", func(r *Reader) any { return r.Level("V", "INFO") }, slog.LevelDebug, ""},
		{"level unset", "", func(r *Reader) any { return r.Level("V", "INFO") }, slog.LevelInfo, ""},
		{"level default", "", func(r *Reader) any { return r.Level("V", "WARN") }, slog.LevelWarn, ""},
		{"level bad", "loud", func(r *Reader) any { return r.Level("V", "INFO") }, slog.LevelInfo,
			`"loud" is not one of DEBUG, INFO, WARN, ERROR`},
		{"valid", "ok", func(r *Reader) any { return r.Valid("V", isOK, "ok") }, "ok", ""},
		{"valid unset", "", func(r *Reader) any { return r.Valid("V", isOK, "ok") }, "", ""},
		{"valid rejected", "no", func(r *Reader) any { return r.Valid("V", isOK, "ok") }, "no", `"no" is not ok`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(func(k string) string {
				if k == "V" {
					return tt.value
				}
				return ""
			})
			if got := tt.read(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("value = %#v, want %#v", got, tt.want)
			}
			err := r.Err("test")
			if tt.problem == "" {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !reflect.DeepEqual(e.Problems, []Problem{{"V", tt.problem}}) {
				t.Errorf("err = %#v, want one problem with V: %s", err, tt.problem)
			}
		})
	}
}

func isOK(v string) bool { return v == "ok" }

func TestErrorListsEveryProblem(t *testing.T) {
	r := NewReader(func(string) string { return "" })
	r.Required("A")
	r.Fail("B", "%d is odd", 3)
	want := "app configuration: A: required; B: 3 is odd"
	if err := r.Err("app"); err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
