package consumer

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	tests := []struct {
		name    string
		value   string // of variable V
		read    func(*Env) any
		want    any
		problem string // reason reported for V, "" for none
	}{
		{"required", " t ", func(e *Env) any { return e.Required("V") }, "t", ""},
		{"required unset", "", func(e *Env) any { return e.Required("V") }, "", "required"},
		{"string", "x", func(e *Env) any { return e.String("V", "d") }, "x", ""},
		{"string unset", " ", func(e *Env) any { return e.String("V", "d") }, "d", ""},
		{"one of", "b", func(e *Env) any { return e.OneOf("V", "a", "a", "b") }, "b", ""},
		{"one of unset", "", func(e *Env) any { return e.OneOf("V", "a", "a", "b") }, "a", ""},
		{"one of is exact", "B", func(e *Env) any { return e.OneOf("V", "a", "a", "b") }, "a", `"B" is not one of a, b`},
		{"list", " a, ,b ", func(e *Env) any { return e.List("V") }, []string{"a", "b"}, ""},
		{"list unset", "", func(e *Env) any { return e.List("V") }, []string(nil), ""},
		{"duration", "90s", func(e *Env) any { return e.Duration("V", time.Hour) }, 90 * time.Second, ""},
		{"duration unset", "", func(e *Env) any { return e.Duration("V", time.Hour) }, time.Hour, ""},
		{"duration zero", "0s", func(e *Env) any { return e.Duration("V", time.Hour) }, time.Hour,
			`"0s" is not a positive Go duration such as 90s or 168h`},
		{"int", "0", func(e *Env) any { return e.Int("V", 7, 0) }, 0, ""},
		{"int unset", "", func(e *Env) any { return e.Int("V", 7, 0) }, 7, ""},
		{"int below min", "0", func(e *Env) any { return e.Int("V", 7, 1) }, 7, `"0" is not an integer >= 1`},
		{"int not a number", "x", func(e *Env) any { return e.Int("V", 7, 1) }, 7, `"x" is not an integer >= 1`},
		{"bool", "true", func(e *Env) any { return e.Bool("V") }, true, ""},
		{"bool unset", "", func(e *Env) any { return e.Bool("V") }, false, ""},
		{"bool bad", "maybe", func(e *Env) any { return e.Bool("V") }, false, `"maybe" is not a boolean (true or false)`},
		{"level", "debug", func(e *Env) any { return e.Level("V", "INFO") }, slog.LevelDebug, ""},
		{"level unset", "", func(e *Env) any { return e.Level("V", "WARN") }, slog.LevelWarn, ""},
		{"level bad", "loud", func(e *Env) any { return e.Level("V", "INFO") }, slog.LevelInfo,
			`"loud" is not one of DEBUG, INFO, WARN, ERROR`},
		{"http url", "https://x.example/a", func(e *Env) any { return e.HTTPURL("V") }, "https://x.example/a", ""},
		{"http url unset", "", func(e *Env) any { return e.HTTPURL("V") }, "", ""},
		{"http url relative", "/a", func(e *Env) any { return e.HTTPURL("V") }, "/a", `"/a" is not an absolute http(s) URL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEnv(func(k string) string {
				if k == "V" {
					return tt.value
				}
				return ""
			})
			if got := tt.read(e); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("value = %#v, want %#v", got, tt.want)
			}
			err := e.Err("test")
			if tt.problem == "" {
				if err != nil {
					t.Errorf("err = %v, want nil", err)
				}
				return
			}
			var cerr *ConfigError
			if !errors.As(err, &cerr) || !reflect.DeepEqual(cerr.Problems, []Problem{{"V", tt.problem}}) {
				t.Errorf("err = %#v, want one problem with V: %s", err, tt.problem)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("errors.Is(%v, ErrConfig) = false", err)
			}
		})
	}
}

func TestConfigErrorListsEveryProblem(t *testing.T) {
	e := NewEnv(func(string) string { return "" })
	e.Required("A")
	e.Fail("B", "%d is odd", 3)
	want := "app configuration: A: required; B: 3 is odd"
	if err := e.Err("app"); err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestIsHTTPURL(t *testing.T) {
	for v, want := range map[string]bool{
		"https://x.example": true, "http://localhost:8080/issue": true,
		"https://sqs.eu-west-1.amazonaws.com/123456789012/orders": true,
		"": false, "/issue": false, "x.example": false, "https:///issue": false,
		"ftp://x.example": false, "http://x.example/%zz": false,
	} {
		if got := IsHTTPURL(v); got != want {
			t.Errorf("IsHTTPURL(%q) = %v, want %v", v, got, want)
		}
	}
}
