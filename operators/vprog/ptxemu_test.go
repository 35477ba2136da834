package vprog

// ptxEmu interprets the subset of PTX this package writes, so that the
// strategies' kernels run in tests on a machine without a GPU
// (strategies_test.go): threads of a block run one at a time up to a
// warp's shuffle or vote, or a block barrier, which then runs for all of
// them at once (every lane of a warp must reach the same one: the kernels
// keep their warps converged there); blocks run one after another.
// Global and shared accesses are checked against their allocations, so a
// wrong address or a parameter out of order fails the test.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// emuOperand is an instruction's operand.
type emuOperand struct {
	kind int    // emuReg, emuImm, emuAddr, emuVec, emuSpecial, emuSym, emuLabel
	reg  int    // register; emuAddr: the base register, -1 for a symbol
	pred int    // d|p: p's register + 1
	imm  uint64 // emuImm's bits
	off  int64  // emuAddr's offset
	sym  string // emuSpecial's, emuSym's and a symbol address's name; emuLabel's label
	vec  []int  // emuVec's registers
}

const (
	emuReg = iota
	emuImm
	emuAddr
	emuVec
	emuSpecial
	emuSym
	emuLabel
)

type emuInstr struct {
	guard  int // predicate register, -1 for none
	neg    bool
	op     string
	parts  []string // op split at its dots
	args   []emuOperand
	target int // bra's
	sync   bool
}

type emuKernel struct {
	name    string
	params  []string
	code    []emuInstr
	regs    map[string]int
	labels  map[string]int
	statics map[string]int // shared variables' offsets
	static  int            // their bytes
}

// parsePTX reads a module's kernels.
func parsePTX(text string) (map[string]*emuKernel, error) {
	kernels := map[string]*emuKernel{}
	var k *emuKernel
	for _, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "//") || strings.HasPrefix(l, ".extern") || strings.HasPrefix(l, ".reg"):
		case strings.HasPrefix(l, ".visible .entry "):
			name := strings.TrimSuffix(strings.TrimPrefix(l, ".visible .entry "), "(")
			k = &emuKernel{name: name, regs: map[string]int{}, labels: map[string]int{}, statics: map[string]int{}}
			kernels[name] = k
		case k == nil || l == ")" || l == "{" || strings.HasPrefix(l, "."+"version"):
		case strings.HasPrefix(l, ".param"):
			f := strings.Fields(strings.TrimSuffix(l, ","))
			k.params = append(k.params, f[2])
		case l == "}":
			k = nil
		case strings.HasPrefix(l, ".shared"):
			f := strings.Fields(strings.TrimSuffix(l, ";"))
			name := f[len(f)-1]
			i := strings.Index(name, "[")
			size, _ := strconv.Atoi(name[i+1 : len(name)-1])
			k.statics[name[:i]] = k.static
			k.static += (size + 15) / 16 * 16
		case strings.HasSuffix(l, ":"):
			k.labels[strings.TrimSuffix(l, ":")] = len(k.code)
		default:
			in, err := k.parseInstr(strings.TrimSuffix(l, ";"))
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", k.name, l, err)
			}
			k.code = append(k.code, in)
		}
	}
	for _, k := range kernels {
		if err := k.resolveLabels(); err != nil {
			return nil, err
		}
	}
	return kernels, nil
}

func (k *emuKernel) resolveLabels() error {
	for i := range k.code {
		in := &k.code[i]
		if in.parts[0] != "bra" {
			continue
		}
		t, ok := k.labels[in.args[0].sym]
		if !ok {
			return fmt.Errorf("%s: no label %s", k.name, in.args[0].sym)
		}
		in.target = t
	}
	return nil
}

func (k *emuKernel) reg(name string) int {
	if i, ok := k.regs[name]; ok {
		return i
	}
	k.regs[name] = len(k.regs)
	return k.regs[name]
}

// splitArgs splits operands at the commas outside [] and {}.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

func (k *emuKernel) parseOperand(s string) (emuOperand, error) {
	switch {
	case strings.HasPrefix(s, "["):
		o := emuOperand{kind: emuAddr, reg: -1}
		base := strings.Trim(s, "[]")
		if i := strings.Index(base, "+"); i >= 0 {
			v, err := strconv.ParseInt(base[i+1:], 10, 64)
			if err != nil {
				return o, err
			}
			base, o.off = base[:i], v
		}
		if strings.HasPrefix(base, "%") {
			o.reg = k.reg(base)
		} else {
			o.sym = base
		}
		return o, nil
	case strings.HasPrefix(s, "{"):
		o := emuOperand{kind: emuVec}
		for _, r := range strings.Split(strings.Trim(s, "{}"), ",") {
			o.vec = append(o.vec, k.reg(strings.TrimSpace(r)))
		}
		return o, nil
	case strings.Contains(s, "id.x") || strings.Contains(s, "taid.x"):
		return emuOperand{kind: emuSpecial, sym: s}, nil
	case strings.HasPrefix(s, "%"):
		if i := strings.Index(s, "|"); i >= 0 {
			return emuOperand{kind: emuReg, reg: k.reg(s[:i]), pred: k.reg(s[i+1:]) + 1}, nil
		}
		return emuOperand{kind: emuReg, reg: k.reg(s)}, nil
	case strings.HasPrefix(s, "$"):
		return emuOperand{kind: emuLabel, sym: s}, nil
	}
	return parseImmediate(s)
}

func parseImmediate(s string) (emuOperand, error) {
	o := emuOperand{kind: emuImm}
	var err error
	switch {
	case strings.HasPrefix(s, "0f"):
		o.imm, err = strconv.ParseUint(s[2:], 16, 32)
	case strings.HasPrefix(s, "0d"):
		o.imm, err = strconv.ParseUint(s[2:], 16, 64)
	case s[0] == '-':
		var v int64
		v, err = strconv.ParseInt(s, 10, 64)
		o.imm = uint64(v)
	case s[0] >= '0' && s[0] <= '9':
		o.imm, err = strconv.ParseUint(s, 10, 64)
	default:
		return emuOperand{kind: emuSym, sym: s}, nil
	}
	return o, err
}

func (k *emuKernel) parseInstr(l string) (emuInstr, error) {
	in := emuInstr{guard: -1}
	if strings.HasPrefix(l, "@") {
		sp := strings.Index(l, " ")
		g := l[1:sp]
		if strings.HasPrefix(g, "!") {
			in.neg, g = true, g[1:]
		}
		in.guard = k.reg(g)
		l = strings.TrimSpace(l[sp:])
	}
	op, rest, _ := strings.Cut(l, " ")
	in.op, in.parts = op, strings.Split(op, ".")
	for _, a := range splitArgs(strings.TrimSpace(rest)) {
		o, err := k.parseOperand(a)
		if err != nil {
			return in, err
		}
		in.args = append(in.args, o)
	}
	in.sync = in.parts[0] == "shfl" || in.parts[0] == "vote" || in.parts[0] == "bar"
	return in, nil
}

// emuMemory is the device's global memory: allocations end to end from
// emuBase (0 is no address).
type emuMemory struct{ heap []byte }

const emuBase = 1 << 20

func (m *emuMemory) alloc(n int) uint64 {
	a := emuBase + uint64(len(m.heap))
	m.heap = append(m.heap, make([]byte, max(256, (n+255)/256*256))...)
	return a
}

func (m *emuMemory) bytes(a uint64, n int) []byte {
	if a < emuBase || a-emuBase+uint64(n) > uint64(len(m.heap)) {
		panic(fmt.Sprintf("global access out of range: %#x (+%d)", a, n))
	}
	return m.heap[a-emuBase : a-emuBase+uint64(n)]
}

func (m *emuMemory) put(raw []byte) uint64 {
	a := m.alloc(len(raw))
	copy(m.bytes(a, len(raw)), raw)
	return a
}

type emuThread struct {
	pc            int
	regs          []uint64
	done, blocked bool
	tid           int
}

// emuBlock is one block's run of a kernel.
type emuBlock struct {
	k                  *emuKernel
	mem                *emuMemory
	shared             []byte
	args               []uint64
	grid, block, ctaid int
}

func typeSize(t string) int {
	switch t {
	case "u8", "s8", "b8":
		return 1
	case "u64", "s64", "b64", "f64":
		return 8
	}
	return 4
}

func (c *emuBlock) bytes(space string, a uint64, n int) []byte {
	if space != "shared" {
		return c.mem.bytes(a, n)
	}
	if a+uint64(n) > uint64(len(c.shared)) {
		panic(fmt.Sprintf("%s: shared access out of range: %d (+%d) of %d", c.k.name, a, n, len(c.shared)))
	}
	return c.shared[a : a+uint64(n)]
}

func (c *emuBlock) load(space string, a uint64, n int) uint64 {
	b := c.bytes(space, a, n)
	switch n {
	case 1:
		return uint64(b[0])
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

func (c *emuBlock) store(space string, a uint64, n int, v uint64) {
	b := c.bytes(space, a, n)
	switch n {
	case 1:
		b[0] = byte(v)
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}

// address is an address operand's value: a register plus offset, or a
// parameter's index.
func (c *emuBlock) address(t *emuThread, o emuOperand) uint64 {
	if o.reg >= 0 {
		return t.regs[o.reg] + uint64(o.off)
	}
	for i, p := range c.k.params {
		if p == o.sym {
			return c.args[i]
		}
	}
	panic("unknown address " + o.sym)
}

func (c *emuBlock) value(t *emuThread, o emuOperand) uint64 {
	switch o.kind {
	case emuReg:
		return t.regs[o.reg]
	case emuImm:
		return o.imm
	case emuSpecial:
		switch o.sym {
		case "%tid.x":
			return uint64(t.tid)
		case "%ntid.x":
			return uint64(c.block)
		case "%ctaid.x":
			return uint64(c.ctaid)
		}
		return uint64(c.grid)
	case emuSym:
		if off, ok := c.k.statics[o.sym]; ok {
			return uint64(off)
		}
		return uint64((c.k.static + 15) / 16 * 16) // the dynamic shared memory
	}
	panic(fmt.Sprintf("%s: operand %+v", c.k.name, o))
}

func f32(x uint64) float64 { return float64(math.Float32frombits(uint32(x))) }
func b32(x float64) uint64 { return uint64(math.Float32bits(float32(x))) }
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// width masks v to t's bits.
func width(t string, v uint64) uint64 {
	switch typeSize(t) {
	case 1:
		return v & 0xFF
	case 4:
		return v & 0xFFFFFFFF
	}
	if t == "pred" {
		return b2u(v != 0)
	}
	return v
}

// signed is v of type t as a signed integer.
func signed(t string, v uint64) int64 {
	if t == "s32" {
		return int64(int32(v))
	}
	return int64(v)
}

// float is v of float type t, and back.
func float(t string, v uint64) float64 {
	if t == "f32" {
		return f32(v)
	}
	return math.Float64frombits(v)
}

func floatBits(t string, f float64) uint64 {
	if t == "f32" {
		return b32(f)
	}
	return math.Float64bits(f)
}

func isFloat(t string) bool  { return t == "f32" || t == "f64" }
func isSigned(t string) bool { return t == "s32" || t == "s64" }

// cmp3 is -1, 0 or 1 as x is below, at or above y.
func cmp3[T int64 | uint64 | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// emuCompare is setp's comparison op of a and b of type t.
func emuCompare(op, t string, a, b uint64) bool {
	var c int // -1, 0, 1; 2 unordered
	switch {
	case isFloat(t):
		x, y := float(t, a), float(t, b)
		c = cmp3(x, y)
		if math.IsNaN(x) || math.IsNaN(y) {
			c = 2
		}
	case isSigned(t):
		c = cmp3(signed(t, a), signed(t, b))
	default:
		c = cmp3(width(t, a), width(t, b))
	}
	switch op {
	case "eq":
		return c == 0
	case "ne":
		return c == -1 || c == 1
	case "neu":
		return c != 0
	case "lt":
		return c == -1
	case "le":
		return c == -1 || c == 0
	case "gt":
		return c == 1
	case "ge":
		return c == 1 || c == 0
	}
	panic("setp " + op)
}

// arith is a two-operand operation of type t.
func arith(op, t string, a, b uint64) uint64 {
	switch {
	case isFloat(t):
		return floatBits(t, emuFloatArith(op, float(t, a), float(t, b)))
	case isSigned(t) && (op == "div" || op == "rem" || op == "min" || op == "max" || op == "shr"):
		return width(t, uint64(signedArith(op, signed(t, a), signed(t, b))))
	}
	return width(t, unsignedArith(op, width(t, a), width(t, b)))
}

// commonArith is the operations of floats and integers alike; false for
// another. Go's min and max are math.Min and math.Max on floats (NaN,
// and -0 below +0).
func commonArith[T int64 | uint64 | float64](op string, x, y T) (T, bool) {
	switch op {
	case "add":
		return x + y, true
	case "sub":
		return x - y, true
	case "mul":
		return x * y, true
	case "div":
		return x / y, true
	case "min":
		return min(x, y), true
	case "max":
		return max(x, y), true
	}
	return 0, false
}

// emuFloatArith rounds once to float64; float32 through float64 is then
// exact for these (53 bits >= 2·24 + 2).
func emuFloatArith(op string, x, y float64) float64 {
	if r, ok := commonArith(op, x, y); ok {
		return r
	}
	panic("float " + op)
}

// signedArith is arith's signed div, rem, min, max and shr.
func signedArith(op string, x, y int64) int64 {
	if r, ok := commonArith(op, x, y); ok {
		return r
	}
	if op == "rem" {
		return x % y
	}
	return x >> (y & 63)
}

func unsignedArith(op string, x, y uint64) uint64 {
	if r, ok := commonArith(op, x, y); ok {
		return r
	}
	switch op {
	case "rem":
		return x % y
	case "and":
		return x & y
	case "or":
		return x | y
	case "xor":
		return x ^ y
	case "shl":
		return x << (y & 63)
	case "shr":
		return x >> (y & 63)
	}
	panic("integer " + op)
}

// step runs t's next instruction; false when t blocked at a sync or
// ended.
func (c *emuBlock) step(t *emuThread) bool {
	in := &c.k.code[t.pc]
	if in.guard >= 0 && (t.regs[in.guard] != 0) == in.neg {
		t.pc++
		return true
	}
	switch {
	case in.sync:
		t.blocked = true
		return false
	case in.op == "ret":
		t.done = true
		return false
	case in.op == "bra":
		t.pc = in.target
		return true
	}
	switch in.parts[0] {
	case "ld", "st", "cvta", "mov":
		c.execMove(t, in)
	case "red", "atom":
		c.execAtomic(t, in)
	case "setp", "selp", "testp":
		c.execPredicate(t, in)
	case "cvt":
		t.regs[in.args[0].reg] = emuCvt(in.parts, c.value(t, in.args[1]))
	default:
		c.execArith(t, in)
	}
	t.pc++
	return true
}

func last(parts []string) string { return parts[len(parts)-1] }

func (c *emuBlock) execMove(t *emuThread, in *emuInstr) {
	a, ty := in.args, last(in.parts)
	switch {
	case in.parts[0] == "ld" && in.parts[1] == "param":
		t.regs[a[0].reg] = c.address(t, a[1])
	case in.parts[0] == "ld":
		t.regs[a[0].reg] = c.load(in.parts[1], c.address(t, a[1]), typeSize(ty))
	case in.parts[0] == "st":
		c.store(in.parts[1], c.address(t, a[0]), typeSize(ty), c.value(t, a[1]))
	case a[0].kind == emuVec: // mov.b64 {lo, hi}, x
		v := c.value(t, a[1])
		t.regs[a[0].vec[0]], t.regs[a[0].vec[1]] = v&0xFFFFFFFF, v>>32
	case a[1].kind == emuVec: // mov.b64 x, {lo, hi}
		t.regs[a[0].reg] = t.regs[a[1].vec[0]]&0xFFFFFFFF | t.regs[a[1].vec[1]]<<32
	default: // mov, cvta
		t.regs[a[0].reg] = width(ty, c.value(t, a[1]))
	}
}

func (c *emuBlock) execArith(t *emuThread, in *emuInstr) {
	a, ty, op := in.args, last(in.parts), in.parts[0]
	x := c.value(t, a[1])
	var r uint64
	switch op {
	case "neg", "abs", "not", "sqrt", "bfind":
		r = emuUnary(op, ty, x)
	case "mul", "mad":
		y := c.value(t, a[2])
		if in.parts[1] == "wide" {
			r = (x & 0xFFFFFFFF) * (y & 0xFFFFFFFF)
		} else {
			r = arith("mul", ty, x, y)
		}
		if op == "mad" && in.parts[1] == "wide" {
			r += c.value(t, a[3])
		} else if op == "mad" {
			r = width(ty, r+c.value(t, a[3]))
		}
	default:
		y := c.value(t, a[2])
		if ty == "pred" {
			r = emuLogic(op, x != 0, y != 0)
		} else {
			r = arith(op, ty, x, y)
		}
	}
	t.regs[a[0].reg] = r
}

func emuLogic(op string, x, y bool) uint64 {
	switch op {
	case "and":
		return b2u(x && y)
	case "or":
		return b2u(x || y)
	}
	return b2u(x != y)
}

func emuUnary(op, ty string, x uint64) uint64 {
	switch {
	case op == "not":
		return b2u(x == 0)
	case op == "bfind":
		if uint32(x) == 0 {
			return 0xFFFFFFFF
		}
		return uint64(31 - bits.LeadingZeros32(uint32(x)))
	case op == "sqrt":
		return floatBits(ty, math.Sqrt(float(ty, x)))
	case isFloat(ty) && op == "neg":
		return floatBits(ty, -float(ty, x))
	case isFloat(ty):
		return floatBits(ty, math.Abs(float(ty, x)))
	case op == "neg":
		return width(ty, -x)
	}
	v := signed(ty, x)
	if v < 0 {
		v = -v
	}
	return width(ty, uint64(v))
}

func (c *emuBlock) execPredicate(t *emuThread, in *emuInstr) {
	a, ty := in.args, last(in.parts)
	var r uint64
	switch in.parts[0] {
	case "selp":
		r = c.value(t, a[2])
		if c.value(t, a[3]) != 0 {
			r = c.value(t, a[1])
		}
		r = width(ty, r)
	case "testp":
		r = b2u(math.IsNaN(float(ty, c.value(t, a[1]))))
	default:
		p := emuCompare(in.parts[1], ty, c.value(t, a[1]), c.value(t, a[2]))
		if len(in.parts) == 4 && in.parts[2] == "and" {
			p = p && c.value(t, a[3]) != 0
		} else if len(in.parts) == 4 {
			p = p || c.value(t, a[3]) != 0
		}
		r = b2u(p)
		if a[0].pred > 0 {
			t.regs[a[0].pred-1] = b2u(!p)
		}
	}
	t.regs[a[0].reg] = r
}

// emuCvt is cvt[.rnd].dst.src of x.
func emuCvt(parts []string, x uint64) uint64 {
	dst, src := parts[len(parts)-2], parts[len(parts)-1]
	if !isFloat(src) {
		if isFloat(dst) {
			if isSigned(src) {
				return floatBits(dst, float64(signed(src, x)))
			}
			return floatBits(dst, float64(width(src, x)))
		}
		if isSigned(src) {
			return width(dst, uint64(signed(src, x)))
		}
		return width(dst, width(src, x))
	}
	f := float(src, x)
	switch parts[1] {
	case "rzi":
		f = math.Trunc(f)
	case "rni":
		f = math.RoundToEven(f)
	}
	switch dst {
	case "f32", "f64":
		return floatBits(dst, f)
	case "s32":
		return width(dst, uint64(int64(saturate(f, math.MinInt32, math.MaxInt32))))
	case "u32":
		return uint64(uint32(saturate(f, 0, math.MaxUint32)))
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return uint64(int64(saturate(f, math.MinInt64, math.MaxInt64)))
}

func saturate(f, lo, hi float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Max(lo, math.Min(hi, f))
}

// execAtomic is red.space.op.type [a], x and atom.space.op.type d, [a],
// x (cas: d, [a], compare, swap).
func (c *emuBlock) execAtomic(t *emuThread, in *emuInstr) {
	a, space, op, ty := in.args, in.parts[1], in.parts[2], last(in.parts)
	at := 0
	if in.parts[0] == "atom" {
		at = 1
	}
	addr, n := c.address(t, a[at]), typeSize(ty)
	old := c.load(space, addr, n)
	v := old
	switch {
	case op != "cas":
		v = arith(op, ty, old, c.value(t, a[at+1]))
	case width(ty, old) == width(ty, c.value(t, a[at+1])):
		v = c.value(t, a[at+2])
	}
	c.store(space, addr, n, v)
	if at == 1 {
		t.regs[a[0].reg] = old
	}
}

// run runs the block's threads (ts, reset here) to their end.
func (c *emuBlock) run(ts []*emuThread) {
	for _, t := range ts {
		clear(t.regs)
		t.pc, t.done, t.blocked = 0, false, false
	}
	for {
		live := 0
		for _, t := range ts {
			for !t.done && !t.blocked && c.step(t) {
			}
			if !t.done {
				live++
			}
		}
		if live == 0 {
			return
		}
		if !c.syncWarps(ts) {
			c.barrier(ts)
		}
	}
}

// syncWarps runs the shuffles and votes every live lane of a warp waits
// at; false when no warp did (all wait at a block barrier).
func (c *emuBlock) syncWarps(ts []*emuThread) bool {
	progress := false
	for w := 0; w*32 < len(ts); w++ {
		lanes := ts[w*32 : min(w*32+32, len(ts))]
		pc, ready := -1, true
		for _, t := range lanes {
			switch {
			case t.done:
				continue
			case c.k.code[t.pc].parts[0] == "bar":
				ready = false
			case pc >= 0 && t.pc != pc:
				panic(c.k.name + ": a warp's lanes wait at different instructions")
			}
			pc = t.pc
		}
		if !ready || pc < 0 {
			continue
		}
		for _, t := range lanes {
			if t.done {
				panic(fmt.Sprintf("%s: %s with lanes that ended", c.k.name, c.k.code[pc].op))
			}
		}
		c.warpOp(lanes, &c.k.code[pc])
		progress = true
	}
	return progress
}

// barrier runs bar.sync or bar.red.or.pred for the block's live threads.
func (c *emuBlock) barrier(ts []*emuThread) {
	var at *emuInstr
	any := false
	for _, t := range ts {
		if t.done {
			continue
		}
		in := &c.k.code[t.pc]
		if at != nil && in != at {
			panic(c.k.name + ": threads at different barriers")
		}
		at = in
		any = any || len(in.args) == 3 && t.regs[in.args[2].reg] != 0
	}
	for _, t := range ts {
		if t.done {
			continue
		}
		if len(at.args) == 3 {
			t.regs[at.args[0].reg] = b2u(any)
		}
		t.blocked = false
		t.pc++
	}
}

// warpOp runs a shuffle or a vote for a warp's lanes.
func (c *emuBlock) warpOp(lanes []*emuThread, in *emuInstr) {
	a := in.args
	vals := make([]uint64, len(lanes))
	for i, t := range lanes {
		vals[i] = c.value(t, a[1])
	}
	var ballot uint64
	for i, v := range vals {
		ballot |= b2u(v != 0) << i
	}
	for i, t := range lanes {
		t.blocked = false
		t.pc++
		if in.parts[0] == "vote" {
			t.regs[a[0].reg] = ballot
			continue
		}
		j := shuffleLane(in.parts[2], i, int(c.value(t, a[2])))
		ok := j >= 0 && j < len(lanes)
		if !ok {
			j = i
		}
		t.regs[a[0].reg] = vals[j] & 0xFFFFFFFF
		if a[0].pred > 0 {
			t.regs[a[0].pred-1] = b2u(ok)
		}
	}
}

// shuffleLane is the lane lane reads in a shuffle of mode by b.
func shuffleLane(mode string, lane, b int) int {
	switch mode {
	case "up":
		return lane - b
	case "down":
		return lane + b
	case "bfly":
		return lane ^ b
	}
	return b
}

// emuLaunch runs kernel name of the module over grid blocks.
func emuLaunch(mem *emuMemory, kernels map[string]*emuKernel, name string, grid, block, shared int, args ...uint64) {
	k := kernels[name]
	if k == nil || len(args) != len(k.params) {
		panic(fmt.Sprintf("%s: %d arguments, want the kernel's parameters", name, len(args)))
	}
	ts := make([]*emuThread, block)
	for i := range ts {
		ts[i] = &emuThread{regs: make([]uint64, len(k.regs)), tid: i}
	}
	c := &emuBlock{k: k, mem: mem, args: args, grid: grid, block: block}
	c.shared = make([]byte, (k.static+15)/16*16+shared)
	for b := 0; b < grid; b++ {
		c.ctaid = b
		clear(c.shared)
		c.run(ts)
	}
}
