package fi

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ParamType is the type of a configuration parameter's value (enum
// fi_param_type; fi_getinfo(3) does not document it, fi_info -e prints it).
type ParamType int

// Parameter types.
const (
	ParamString ParamType = iota // FI_PARAM_STRING
	ParamInt                     // FI_PARAM_INT
	ParamBool                    // FI_PARAM_BOOL
	ParamSize                    // FI_PARAM_SIZE_T
)

// String prints t as fi_info -e does: "String", "Integer",
// "Boolean (0/1, on/off, true/false, yes/no)" or "size_t".
func (t ParamType) String() string {
	return enumString(int64(t), []string{"String", "Integer",
		"Boolean (0/1, on/off, true/false, yes/no)", "size_t"})
}

// Param is a configuration parameter read from the environment: the Go
// form of a parameter defined with fi_param_define(3) and listed by
// fi_getparams(3) and fi_info -e. Define one with [DefineParam] and read it
// with its Lookup, Int, Bool and Size methods (fi_param_get_str, _int,
// _bool, _size_t); the environment is read on every call.
//
// A Param is immutable and safe for concurrent use.
type Param struct {
	// Name is the environment variable: "FI_" + the provider's name + "_" +
	// the parameter's name, upper-cased ("FI_TCP_IFACE"), or "FI_" + the
	// parameter's name for the framework's own ("FI_PROVIDER").
	Name string
	// Prov is the provider that defined the parameter, empty for the
	// framework.
	Prov string
	// Type is the type of the value.
	Type ParamType
	// Help describes the parameter; by libfabric's convention it ends with
	// the default, "(default: 256)".
	Help string
}

// params holds the defined parameters in definition order.
var params struct {
	mu   sync.Mutex // guards list
	list []*Param
}

// DefineParam defines the parameter name of provider prov (empty for the
// framework's own) and returns it, like fi_param_define(3). Providers call
// it from init or package variable declarations. It panics if name is
// empty or the parameter is already defined.
func DefineParam(prov, name string, typ ParamType, help string) *Param {
	if name == "" {
		panic("fi: DefineParam with empty name")
	}
	env := "FI_" + name
	if prov != "" {
		env = "FI_" + prov + "_" + name
	}
	p := &Param{Name: strings.ToUpper(env), Prov: prov, Type: typ, Help: help}
	params.mu.Lock()
	defer params.mu.Unlock()
	if slices.ContainsFunc(params.list, func(q *Param) bool { return q.Name == p.Name }) {
		panic("fi: DefineParam called twice for " + p.Name)
	}
	params.list = append(params.list, p)
	return p
}

// Params returns every defined parameter in definition order, the
// framework's first, like fi_getparams(3).
func Params() []*Param {
	params.mu.Lock()
	defer params.mu.Unlock()
	return slices.Clone(params.list)
}

// The framework's own parameters, read by GetInfo and the logger.
var (
	_ = DefineParam("", "provider", ParamString,
		"Comma-separated list of the providers to use, or with a leading ^ of those to leave out (default: all)")
	_ = DefineParam("", "log_level", ParamString,
		"Level of log messages to print: warn, trace, info or debug (default: none)")
	_ = DefineParam("", "log_prov", ParamString,
		"Comma-separated list of the providers whose messages to log, or with a leading ^ of those not to (default: all)")
)

// Lookup returns the parameter's value and whether it is set, like
// fi_param_get_str(3).
func (p *Param) Lookup() (string, bool) { return os.LookupEnv(p.Name) }

// value returns the trimmed value, or ENODATA when it is unset.
func (p *Param) value() (string, error) {
	v, ok := p.Lookup()
	if !ok {
		return "", wrapf(ENODATA, "fi: param %s: not set", p.Name)
	}
	return strings.TrimSpace(v), nil
}

// Int returns the parameter as an integer (decimal, or 0x/0 prefixed hex
// and octal), like fi_param_get_int(3). It returns ENODATA when the
// variable is unset and EINVAL when it is not a number.
func (p *Param) Int() (int, error) {
	v, err := p.value()
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 0, 0)
	if perr != nil {
		return 0, wrapf(EINVAL, "fi: param %s: %q is not an integer", p.Name, v)
	}
	return int(n), nil
}

// Bool returns the parameter as a boolean, like fi_param_get_bool(3): 1,
// on, true and yes are true, 0, off, false and no are false, in any case.
// It returns ENODATA when the variable is unset and EINVAL for other
// values.
func (p *Param) Bool() (bool, error) {
	v, err := p.value()
	if err != nil {
		return false, err
	}
	switch strings.ToLower(v) {
	case "1", "on", "true", "yes":
		return true, nil
	case "0", "off", "false", "no":
		return false, nil
	}
	return false, wrapf(EINVAL, "fi: param %s: %q is not a boolean", p.Name, v)
}

// Size returns the parameter as a size, like fi_param_get_size_t(3). As
// with C's strtoul, a negative number wraps around: -1 is the largest size.
// It returns ENODATA when the variable is unset and EINVAL when it is not a
// number.
func (p *Param) Size() (uint64, error) {
	v, err := p.value()
	if err != nil {
		return 0, err
	}
	if n, perr := strconv.ParseUint(v, 0, 64); perr == nil {
		return n, nil
	}
	n, perr := strconv.ParseInt(v, 0, 64)
	if perr != nil {
		return 0, wrapf(EINVAL, "fi: param %s: %q is not a size", p.Name, v)
	}
	return uint64(n), nil
}
