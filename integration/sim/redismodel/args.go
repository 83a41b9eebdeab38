package redismodel

import (
	"encoding"
	"fmt"
	"net"
	"strconv"
	"time"
)

// argString returns arg as go-redis v9 writes it on the wire (its
// proto.Writer.WriteArg), so that ARGV holds what a real server would see.
// Pointers to these types, which go-redis also takes, are not modelled.
func argString(arg any) (string, error) {
	switch v := arg.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 64), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		if v {
			return "1", nil
		}
		return "0", nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case time.Duration:
		return strconv.FormatInt(v.Nanoseconds(), 10), nil
	case encoding.BinaryMarshaler:
		b, err := v.MarshalBinary()
		return string(b), err
	case net.IP:
		return string(v), nil
	}
	return "", fmt.Errorf("redis: can't marshal %T (implement encoding.BinaryMarshaler)", arg)
}

// argStrings converts args with argString.
func argStrings(args []any) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		s, err := argString(a)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}
