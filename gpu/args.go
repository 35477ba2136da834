package gpu

import (
	"fmt"
	"reflect"
	"structs"
	"sync"
	"unsafe"
)

// Kernels with many parameters take one struct instead (kernels/*.cu:
// `struct BottomUpArgs {...}; __global__ void bottom_up(BottomUpArgs a)`),
// as warpseg.cuh's WSArgs does inside the kernels: a launch then names its
// fields, and adding one cannot shift the others. Args passes a Go struct
// whose bytes are the C struct's.

// structArg is a struct argument's bytes, copied when Args is called.
type structArg struct {
	b    []byte
	name string
}

// Args is the struct *p as one kernel argument, by value. T must lay out
// as the kernel's C struct: a structs.HostLayout field first, then the C
// struct's fields in order, each a fixed-width number (DevicePtr or uint64
// for a pointer, int32, uint32, float32, int64, float64, int16, uint16,
// int8, uint8, bool) or an array of them; C and Go pad these alike on
// amd64 and arm64. A T that breaks these rules panics: it is a
// programming error, found by the first launch of any test. Launch checks
// the size against the kernel's parameter where the driver reports it.
func Args[T any](p *T) any {
	t := reflect.TypeFor[T]()
	if err := checkArgsType(t); err != nil {
		panic(err)
	}
	b := make([]byte, unsafe.Sizeof(*p))
	copy(b, unsafe.Slice((*byte)(unsafe.Pointer(p)), len(b)))
	return structArg{b: b, name: t.String()}
}

// checked caches checkArgsType's verdict by type.
var checked sync.Map // reflect.Type → error (nil: fine)

var hostLayout = reflect.TypeFor[structs.HostLayout]()

// checkArgsType says why t cannot be a kernel's struct argument, or nil.
func checkArgsType(t reflect.Type) error {
	if v, ok := checked.Load(t); ok {
		err, _ := v.(error)
		return err
	}
	err := argsTypeError(t)
	checked.Store(t, err)
	return err
}

func argsTypeError(t reflect.Type) error {
	if t.Kind() != reflect.Struct || t.NumField() == 0 || t.Field(0).Type != hostLayout {
		return fmt.Errorf("gpu: kernel argument struct %s must begin with a structs.HostLayout field", t)
	}
	for i := 1; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Array {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Bool, reflect.Int8, reflect.Uint8, reflect.Int16, reflect.Uint16, reflect.Int32, reflect.Uint32,
			reflect.Int64, reflect.Uint64, reflect.Float32, reflect.Float64:
		default:
			return fmt.Errorf("gpu: kernel argument struct %s: field %s is a %s; only fixed-width numbers (DevicePtr for pointers) lay out as C does", t, f.Name, f.Type)
		}
	}
	return nil
}
