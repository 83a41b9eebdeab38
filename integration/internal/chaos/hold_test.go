package chaos

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/exactlyonce/sqsidem/integration/internal/partner"
)

// fakeIdemctl writes a script that prints answer for the command named in
// its first argument, and records its arguments.
func fakeIdemctl(t *testing.T, answers map[string]string) (bin, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	script := "#!/bin/sh\necho \"$@\" >> " + argsFile + "\ncase \"$1\" in\n"
	for cmd, out := range answers {
		script += cmd + ") cat <<'EOF'\n" + out + "\nEOF\n;;\n"
	}
	script += "*) echo unknown command >&2; exit 2;;\nesac\n"
	bin = filepath.Join(dir, "idemctl")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

func TestOperatorHeld(t *testing.T) {
	bin, args := fakeIdemctl(t, map[string]string{
		"list": `{"matched":2,"records":[{"storageKey":"consumer#a","state":"held"},{"storageKey":"consumer#b","state":"held"}]}`,
	})
	o := &Operator{Idemctl: bin, Flags: []string{"--table", "T", "--output", "json"}}
	got, err := o.Held(context.Background())
	if err != nil || !slices.Equal(got, []string{"consumer#a", "consumer#b"}) {
		t.Fatalf("Held = %v, %v", got, err)
	}
	b, _ := os.ReadFile(args)
	if want := "list --status held --limit 0 --table T --output json"; strings.TrimSpace(string(b)) != want {
		t.Fatalf("idemctl ran with %q, want %q", b, want)
	}
}

// TestOperatorHeldIncomplete: a list that shows fewer records than it
// matched (a --limit) is refused: a held key would go unresolved.
func TestOperatorHeldIncomplete(t *testing.T) {
	bin, _ := fakeIdemctl(t, map[string]string{"list": `{"matched":3,"records":[{"storageKey":"consumer#a"}]}`})
	if _, err := (&Operator{Idemctl: bin}).Held(context.Background()); err == nil {
		t.Fatal("Held: no error for 1 record shown of 3")
	}
}

func TestOperatorResolve(t *testing.T) {
	bin, args := fakeIdemctl(t, map[string]string{"resolve": `{"decision":"done","written":true,"before":{"state":"held"}}`})
	o := &Operator{Idemctl: bin}
	if err := o.Resolve(context.Background(), "o-1", true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(args)
	if want := "resolve o-1 --done --yes"; strings.TrimSpace(string(b)) != want {
		t.Fatalf("idemctl ran with %q, want %q", b, want)
	}
	// Nothing written (the record was already settled): not a resolution.
	bin, _ = fakeIdemctl(t, map[string]string{"resolve": `{"decision":"done","written":false,"note":"already completed: nothing written","before":{"state":"completed"}}`})
	if err := (&Operator{Idemctl: bin}).Resolve(context.Background(), "o-1", true); err == nil || !strings.Contains(err.Error(), "nothing written") {
		t.Fatalf("Resolve of a settled record: %v", err)
	}
	// idemctl refusing (exit 1) is an error with its message.
	bin, _ = fakeIdemctl(t, map[string]string{})
	if err := (&Operator{Idemctl: bin}).Resolve(context.Background(), "o-1", false); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("Resolve with idemctl failing: %v", err)
	}
}

// TestOperatorLookup asks a real partner: 200 applied, 404 not; while it
// is down, an error, never an answer.
func TestOperatorLookup(t *testing.T) {
	srv, err := partner.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := postEffect(srv.URL(), "done-1"); err != nil {
		t.Fatal(err)
	}
	o := &Operator{Partner: srv.URL()}
	for key, want := range map[string]bool{"done-1": true, "never": false} {
		if got, err := o.Lookup(context.Background(), key); err != nil || got != want {
			t.Errorf("Lookup(%s) = %v, %v; want %v", key, got, err, want)
		}
	}
	srv.SetFaults(partner.Faults{Down: true})
	if _, err := o.Lookup(context.Background(), "done-1"); err == nil {
		t.Error("Lookup while the partner is down: no error")
	}
	if o.Lookups() != 3 || srv.Stats().Lookups != 3 {
		t.Errorf("lookups: operator %d, partner %d; want 3", o.Lookups(), srv.Stats().Lookups)
	}
}

func postEffect(base, key string) error {
	req, err := http.NewRequest(http.MethodPost, base+"/effects", strings.NewReader(`{}`))
	if err != nil {
		return err
	}
	req.Header.Set(partner.KeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s", key, resp.Status)
	}
	return nil
}
