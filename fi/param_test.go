package fi_test

import (
	"math"
	"testing"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testParam is defined once for the whole test binary: definitions are
// global, like fi_param_define's.
var testParam = fi.DefineParam("paramtest", "value", fi.ParamInt, "a test parameter (default: 1)")

func TestDefineParam(t *testing.T) {
	require.Equal(t, "FI_PARAMTEST_VALUE", testParam.Name)
	require.Equal(t, "paramtest", testParam.Prov)
	ps := fi.Params()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	require.Equal(t, []string{"FI_PROVIDER", "FI_LOG_LEVEL", "FI_LOG_PROV"}, names[:3], "framework parameters come first")
	require.Contains(t, names, "FI_PARAMTEST_VALUE")
	require.PanicsWithValue(t, "fi: DefineParam called twice for FI_PARAMTEST_VALUE", func() {
		fi.DefineParam("PARAMTEST", "Value", fi.ParamString, "")
	})
	require.Panics(t, func() { fi.DefineParam("paramtest", "", fi.ParamString, "") })
}

func TestParamType(t *testing.T) {
	require.Equal(t, "Integer", fi.ParamInt.String())
	require.Equal(t, "Boolean (0/1, on/off, true/false, yes/no)", fi.ParamBool.String())
	require.Equal(t, "size_t", fi.ParamSize.String())
	require.Equal(t, "String", fi.ParamString.String())
}

func TestParamGet(t *testing.T) {
	t.Run("unset", func(t *testing.T) {
		_, ok := testParam.Lookup()
		require.False(t, ok)
		_, err := testParam.Int()
		require.ErrorIs(t, err, fi.ENODATA)
		_, err = testParam.Bool()
		require.ErrorIs(t, err, fi.ENODATA)
		_, err = testParam.Size()
		require.ErrorIs(t, err, fi.ENODATA)
	})
	tests := []struct {
		env     string
		intv    int
		intErr  bool
		boolv   bool
		boolErr bool
		size    uint64
		sizeErr bool
	}{
		{env: "1", intv: 1, boolv: true, size: 1},
		{env: " 0x10 ", intv: 16, boolErr: true, size: 16},
		{env: "0", intv: 0, boolv: false, size: 0},
		{env: "-1", intv: -1, boolErr: true, size: math.MaxUint64},
		{env: "Yes", intErr: true, boolv: true, sizeErr: true},
		{env: "off", intErr: true, boolv: false, sizeErr: true},
		{env: "12k", intErr: true, boolErr: true, sizeErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv("FI_PARAMTEST_VALUE", tt.env)
			v, ok := testParam.Lookup()
			require.True(t, ok)
			require.Equal(t, tt.env, v)
			n, err := testParam.Int()
			if tt.intErr {
				require.ErrorIs(t, err, fi.EINVAL)
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.intv, n)
			}
			b, err := testParam.Bool()
			if tt.boolErr {
				require.ErrorIs(t, err, fi.EINVAL)
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.boolv, b)
			}
			s, err := testParam.Size()
			if tt.sizeErr {
				require.ErrorIs(t, err, fi.EINVAL)
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.size, s)
			}
		})
	}
}
