package ddbmodel

// The condition grammar, from loosest to tightest binding:
//
//	cond     = and { OR and }
//	and      = not { AND not }
//	not      = NOT not | primary
//	primary  = "(" cond ")" | function | operand comparison
//	comparison = cmp operand | BETWEEN operand AND operand | IN "(" operand {"," operand} ")"
//	function = attribute_exists(path) | attribute_not_exists(path) | attribute_type(path, operand)
//	         | begins_with(operand, operand) | contains(operand, operand)
//	operand  = path | :value | size(operand)

type cond interface{}

type (
	condAnd     struct{ l, r cond }
	condOr      struct{ l, r cond }
	condNot     struct{ c cond }
	condCompare struct {
		op   string // = <> < <= > >=
		l, r *operand
	}
	condBetween struct{ v, lo, hi *operand }
	condIn      struct {
		v    *operand
		list []*operand
	}
	condFunc struct {
		fn   string
		args []*operand
	}
)

type operandKind int

const (
	opPath operandKind = iota
	opValue
	opSize        // size(args[0])
	opIfNotExists // if_not_exists(path, args[0]), update only
	opListAppend  // list_append(args[0], args[1]), update only
)

type operand struct {
	kind operandKind
	path docPath
	ref  int // opValue: the index of its :placeholder in the expression's refs
	args []*operand
}

// condExpr is a parsed ConditionExpression.
type condExpr struct {
	root  cond
	refs  []string
	paths []docPath // every document path in it
}

// maxIn is DynamoDB's limit on the operands of IN.
const maxIn = 100

func parseCondition(src string) (*condExpr, *exprError) {
	var root cond
	p, err := parse(src, func(p *parser) { root, _ = p.or() })
	if err != nil {
		return nil, err
	}
	return &condExpr{root: root, refs: p.refs, paths: condPaths(root, nil)}, nil
}

// or, and, not and primary also report whether the condition is a
// parenthesised one, to refuse "((a = :v))" as DynamoDB does.
func (p *parser) or() (cond, bool) {
	c, paren := p.and()
	for p.accept("OR") {
		r, _ := p.and()
		c, paren = condOr{c, r}, false
	}
	return c, paren
}

func (p *parser) and() (cond, bool) {
	c, paren := p.not()
	for p.accept("AND") {
		r, _ := p.not()
		c, paren = condAnd{c, r}, false
	}
	return c, paren
}

func (p *parser) not() (cond, bool) {
	if p.accept("NOT") {
		c, _ := p.not()
		return condNot{c}, false
	}
	return p.primary()
}

func (p *parser) primary() (cond, bool) {
	if p.accept("(") {
		c, paren := p.or()
		if paren {
			p.fail("The expression has redundant parentheses;")
		}
		p.expect(")")
		return c, true
	}
	if t := p.peek(); t.kind == tIdent && p.toks[p.i+1].is("(") {
		switch t.text {
		case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains":
			return p.condFunction(), false
		}
	}
	l := p.operand()
	switch t := p.peek(); {
	case t.is("=") || t.is("<>") || t.is("<") || t.is("<=") || t.is(">") || t.is(">="):
		p.i++
		return condCompare{op: t.text, l: l, r: p.operand()}, false
	case p.accept("BETWEEN"):
		lo := p.operand()
		p.expect("AND")
		return condBetween{v: l, lo: lo, hi: p.operand()}, false
	case p.accept("IN"):
		p.expect("(")
		in := condIn{v: l, list: []*operand{p.operand()}}
		for p.accept(",") {
			in.list = append(in.list, p.operand())
		}
		p.expect(")")
		if len(in.list) > maxIn {
			p.fail("The IN operator is provided with too many operands; number of operands: %d", len(in.list))
		}
		return in, false
	}
	p.syntaxError()
	return nil, false
}

// arity is the number of operands of each condition function.
var arity = map[string]int{
	"attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2,
	"begins_with": 2, "contains": 2, "size": 1, "if_not_exists": 2, "list_append": 2,
}

// condFunction parses a function that is a condition in itself.
func (p *parser) condFunction() cond {
	name, args := p.call(p.operand)
	if args[0].kind != opPath {
		p.fail("Operator or function requires a document path; operator or function: %s", name)
	}
	return condFunc{fn: name, args: args}
}

// call parses name(arg, ...) with arg for each argument, checking their
// number.
func (p *parser) call(arg func() *operand) (string, []*operand) {
	name := p.next().text
	p.expect("(")
	args := []*operand{arg()}
	for p.accept(",") {
		args = append(args, arg())
	}
	p.expect(")")
	if len(args) != arity[name] {
		p.fail("Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, len(args))
	}
	return name, args
}

// operand parses an operand of a condition.
func (p *parser) operand() *operand {
	t := p.peek()
	switch {
	case t.kind == tValue:
		p.i++
		return &operand{kind: opValue, ref: p.ref(t.text)}
	case t.kind == tIdent && p.toks[p.i+1].is("("):
		switch t.text {
		case "size":
			_, args := p.call(p.operand)
			if args[0].kind == opSize {
				p.fail("Incorrect operand type for operator or function; operator or function: size, operand type: N")
			}
			return &operand{kind: opSize, args: args}
		case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains":
			p.fail("The function is not allowed to be used this way in an expression; function: %s", t.text)
		case "if_not_exists", "list_append":
			p.fail("The function is not allowed in a condition expression; function: %s", t.text)
		}
		p.fail("Invalid function name; function: %s", t.text)
	}
	return &operand{kind: opPath, path: p.path()}
}
