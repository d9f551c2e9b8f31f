//go:build linux

package tcp

import (
	"os"
	"testing"
	"time"

	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

func TestLoadParams(t *testing.T) {
	const (
		dflt   = defaultConnTimeoutMS * time.Millisecond
		dUser  = defaultUserTimeoutMS * time.Millisecond
		dStall = defaultStallTimeoutMS * time.Millisecond
	)
	tests := []struct {
		name string
		env  map[string]string
		want params
		// bad, when set, is the variable the error must name.
		bad string
	}{
		{name: "defaults", want: params{nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "iface", env: map[string]string{"FI_TCP_IFACE": "eth7"}, want: params{iface: "eth7", nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "port range", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "40000", "FI_TCP_PORT_HIGH_RANGE": "0x9c50"},
			want: params{portLow: 40000, portHigh: 40016, nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "one-port range", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "65535", "FI_TCP_PORT_HIGH_RANGE": "65535"},
			want: params{portLow: 65535, portHigh: 65535, nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "nodelay off", env: map[string]string{"FI_TCP_NODELAY": "off"}, want: params{connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "nodelay on", env: map[string]string{"FI_TCP_NODELAY": "1"}, want: params{nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "conn timeout", env: map[string]string{"FI_TCP_CONN_TIMEOUT": "1500"},
			want: params{nodelay: true, connTimeout: 1500 * time.Millisecond, userTimeout: dUser, stallTimeout: dStall}},
		{name: "user timeout", env: map[string]string{"FI_TCP_USER_TIMEOUT": "2000"},
			want: params{nodelay: true, connTimeout: dflt, userTimeout: 2 * time.Second, stallTimeout: dStall}},
		{name: "user timeout off", env: map[string]string{"FI_TCP_USER_TIMEOUT": "0"},
			want: params{nodelay: true, connTimeout: dflt, stallTimeout: dStall}},
		{name: "stall timeout", env: map[string]string{"FI_TCP_STALL_TIMEOUT": "0x1f4"},
			want: params{nodelay: true, connTimeout: dflt, userTimeout: dUser, stallTimeout: 500 * time.Millisecond}},
		{name: "stall timeout off", env: map[string]string{"FI_TCP_STALL_TIMEOUT": "0"},
			want: params{nodelay: true, connTimeout: dflt, userTimeout: dUser}},
		{name: "negative user timeout", env: map[string]string{"FI_TCP_USER_TIMEOUT": "-1"}, bad: "FI_TCP_USER_TIMEOUT=-1"},
		{name: "stall timeout not a number", env: map[string]string{"FI_TCP_STALL_TIMEOUT": "soon"}, bad: "FI_TCP_STALL_TIMEOUT"},
		{name: "user timeout overflows", env: map[string]string{"FI_TCP_USER_TIMEOUT": "9223372036854775807"}, bad: "FI_TCP_USER_TIMEOUT"},
		{name: "low without high", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "40000"}, bad: "FI_TCP_PORT_HIGH_RANGE"},
		{name: "high without low", env: map[string]string{"FI_TCP_PORT_HIGH_RANGE": "40000"}, bad: "FI_TCP_PORT_LOW_RANGE"},
		{name: "low above high", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "5001", "FI_TCP_PORT_HIGH_RANGE": "5000"}, bad: "FI_TCP_PORT_LOW_RANGE=5001"},
		{name: "port above 65535", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "1", "FI_TCP_PORT_HIGH_RANGE": "65536"}, bad: "FI_TCP_PORT_HIGH_RANGE=65536"},
		{name: "negative port", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "-1", "FI_TCP_PORT_HIGH_RANGE": "5"}, bad: "FI_TCP_PORT_LOW_RANGE=-1"},
		{name: "port not a number", env: map[string]string{"FI_TCP_PORT_LOW_RANGE": "low"}, bad: "FI_TCP_PORT_LOW_RANGE"},
		{name: "nodelay not a boolean", env: map[string]string{"FI_TCP_NODELAY": "2"}, bad: "FI_TCP_NODELAY"},
		{name: "congestion reno", env: map[string]string{"FI_TCP_CONGESTION": "reno"},
			want: params{nodelay: true, congestion: "reno", connTimeout: dflt, userTimeout: dUser, stallTimeout: dStall}},
		{name: "congestion not offered", env: map[string]string{"FI_TCP_CONGESTION": "nosuchcc"}, bad: "FI_TCP_CONGESTION=\"nosuchcc\""},
		{name: "zero timeout", env: map[string]string{"FI_TCP_CONN_TIMEOUT": "0"}, bad: "FI_TCP_CONN_TIMEOUT=0"},
		{name: "negative timeout", env: map[string]string{"FI_TCP_CONN_TIMEOUT": "-5"}, bad: "FI_TCP_CONN_TIMEOUT=-5"},
		{name: "timeout overflows", env: map[string]string{"FI_TCP_CONN_TIMEOUT": "9223372036854775807"}, bad: "FI_TCP_CONN_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range []*fi.Param{paramIface, paramPortLow, paramPortHigh, paramNodelay, paramCongestion, paramConnTimeout, paramUserTimeout, paramStallTimeout} {
				t.Setenv(p.Name, "")
				require.NoError(t, os.Unsetenv(p.Name))
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got, err := loadParams()
			if tt.bad != "" {
				require.ErrorIs(t, err, fi.EINVAL)
				require.ErrorContains(t, err, tt.bad)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParamsListed(t *testing.T) {
	// fi_info -e lists what fi.Params returns.
	want := map[string]fi.ParamType{
		"FI_TCP_IFACE": fi.ParamString, "FI_TCP_PORT_LOW_RANGE": fi.ParamInt,
		"FI_TCP_PORT_HIGH_RANGE": fi.ParamInt, "FI_TCP_NODELAY": fi.ParamBool,
		"FI_TCP_CONN_TIMEOUT": fi.ParamInt, "FI_TCP_CONGESTION": fi.ParamString,
		"FI_TCP_USER_TIMEOUT": fi.ParamInt, "FI_TCP_STALL_TIMEOUT": fi.ParamInt,
	}
	for _, p := range fi.Params() {
		if p.Prov != "tcp" {
			continue
		}
		typ, ok := want[p.Name]
		require.True(t, ok, "unexpected parameter %s", p.Name)
		require.Equal(t, typ, p.Type, p.Name)
		require.NotEmpty(t, p.Help, p.Name)
		delete(want, p.Name)
	}
	require.Empty(t, want, "parameters not defined")
}
