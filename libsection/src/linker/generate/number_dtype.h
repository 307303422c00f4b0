// Arrays of a differentiated module's numbers (dual.h, tape.h) are NumPy arrays of a user dtype
// registered once per process per number type (`number_dtype`), so that the op's own array
// code works on them unchanged: `PyArray_EMPTY(nd, dims, TYPENUM_OUTPUT_0, 0)`,
// `PyArray_ZEROS`, `PyArray_FROM_OTF(x, TYPENUM_INPUT_0, ...)` of a plain array (float64 and
// float32 arrays become numbers of their values, no derivatives) and `PyArray_GETPTR*`. No
// cast leaves the numbers, which would drop their derivatives.
//
// C++ only. Embedded at build time (libsection/embed.cmake), these notes left out.
#ifndef LIBSECTION_NUMBER_DTYPE_H
#define LIBSECTION_NUMBER_DTYPE_H

namespace libsection {

// What differs between the numbers' dtypes: the scalar type's name (which names the dtype,
// `numpy.dtype[dual_float64_3]`, and finds its registration, once per process, whichever
// module made it; the layout's version is in it: a later libsection with another layout
// registers its own), what indexing an array shows from Python, and a byte swap.
template <class D>
struct number_layout;
template <class T, int W>
struct number_layout<dual<T, W>> {
  static void name(char* text, std::size_t size) {
    snprintf(text, size, "libsection.dual_%s_%d_v1", sizeof(T) == 4 ? "float32" : "float64", W);
  }
  // (value, tangent 0, ...)
  static PyObject* item(dual<T, W> const& x) {
    PyObject* out = PyTuple_New(W + 1);
    for (int i = 0; out && i <= W; ++i) {
      PyObject* part = PyFloat_FromDouble(i == 0 ? double(x.v) : double(x.d[i - 1]));
      if (!part) Py_CLEAR(out);
      else PyTuple_SET_ITEM(out, i, part);
    }
    return out;
  }
  static void swap(char* p) {
    for (std::size_t k = 0; k < sizeof(dual<T, W>); k += sizeof(T))
      std::reverse(p + k, p + k + sizeof(T));
  }
};
template <class T>
struct number_layout<active<T>> {
  static void name(char* text, std::size_t size) {
    snprintf(text, size, "libsection.active_%s_v2", sizeof(T) == 4 ? "float32" : "float64");
  }
  // (value, its id on the tape, its slope there)
  static PyObject* item(active<T> const& x) {
    return Py_BuildValue("(dKd)", double(x.v), (unsigned long long)x.id, x.slope);
  }
  static void swap(char* p) {
    std::reverse(p, p + sizeof(T));
    char* id = p + offsetof(active<T>, id);
    std::reverse(id, id + sizeof(std::uint64_t));
    char* slope = p + offsetof(active<T>, slope);
    std::reverse(slope, slope + sizeof(double));
  }
};

template <class D>
struct number_dtype {
  static char const* name() {
    static char text[64];
    if (!text[0]) number_layout<D>::name(text, sizeof text);
    return text;
  }
  static PyObject* getitem(void* data, void*) {
    D x;
    std::memcpy(&x, data, sizeof x);
    return number_layout<D>::item(x);
  }
  // A number: that value, no derivatives.
  static int setitem(PyObject* item, void* data, void*) {
    double const v = PyFloat_AsDouble(item);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    D x(v);
    std::memcpy(data, &x, sizeof x);
    return 0;
  }
  static void copyswap(void* dst, void* src, int swap, void*) {
    if (src) std::memmove(dst, src, sizeof(D));
    if (swap) number_layout<D>::swap((char*)dst);
  }
  static void copyswapn(void* dst, npy_intp ds, void* src, npy_intp ss, npy_intp n, int swap,
                        void*) {
    char* d = (char*)dst;
    char* s = (char*)src;
    for (npy_intp i = 0; i < n; ++i, d += ds) {
      if (s) {
        std::memmove(d, s, sizeof(D));
        s += ss;
      }
      if (swap) number_layout<D>::swap(d);
    }
  }
  static npy_bool nonzero(void* data, void*) {
    D x;
    std::memcpy(&x, data, sizeof x);
    return x.v != 0;
  }
  template <class From>
  static void from_plain(void* in, void* out, npy_intp n, void*, void*) {
    From const* src = (From const*)in;
    D* dst = (D*)out;
    for (npy_intp i = 0; i < n; ++i) dst[i] = D(src[i]);
  }
  static int find() {
    for (int i = 0; i < NPY_NUMUSERTYPES; ++i) {
      PyArray_Descr* descr = PyArray_DescrFromType(NPY_USERDEF + i);
      if (!descr) return -1;
      bool const same = std::strcmp(descr->typeobj->tp_name, name()) == 0;
      Py_DECREF(descr);
      if (same) return NPY_USERDEF + i;
    }
    return NPY_NOTYPE;
  }
  static int add_casts(int number) {
    PyArray_Descr* f64 = PyArray_DescrFromType(NPY_FLOAT64);
    PyArray_Descr* f32 = PyArray_DescrFromType(NPY_FLOAT32);
    int failed = !f64 || !f32 ||
                 PyArray_RegisterCastFunc(f64, number, from_plain<npy_float64>) < 0 ||
                 PyArray_RegisterCastFunc(f32, number, from_plain<npy_float32>) < 0 ||
                 PyArray_RegisterCanCast(f64, number, NPY_NOSCALAR) < 0 ||
                 PyArray_RegisterCanCast(f32, number, NPY_NOSCALAR) < 0;
    Py_XDECREF(f64);
    Py_XDECREF(f32);
    return failed ? -1 : number;
  }
  static int add() {
    static PyArray_ArrFuncs funcs;
    PyArray_InitArrFuncs(&funcs);
    funcs.getitem = getitem;
    funcs.setitem = setitem;
    funcs.copyswap = copyswap;
    funcs.copyswapn = copyswapn;
    funcs.nonzero = nonzero;
    PyType_Slot slots[] = {
        {Py_tp_doc,
         (void*)"a number of libsection's derived gradients (a value and its derivatives)"},
        {0, NULL}};
    PyType_Spec spec = {name(), 0, 0, Py_TPFLAGS_DEFAULT, slots};
    PyObject* bases = PyTuple_Pack(1, (PyObject*)&PyGenericArrType_Type);
    PyObject* scalar = bases ? PyType_FromSpecWithBases(&spec, bases) : NULL;
    Py_XDECREF(bases);
    if (!scalar) return -1;
#if NPY_ABI_VERSION >= 0x02000000
    static PyArray_DescrProto proto;
#else
    static PyArray_Descr proto;
#endif
    std::memset(&proto, 0, sizeof proto);
    Py_SET_TYPE((PyObject*)&proto, &PyArrayDescr_Type);
    Py_SET_REFCNT((PyObject*)&proto, 1);
    proto.typeobj = (PyTypeObject*)scalar;  // kept for the process, as the dtype is
    proto.kind = 'V';
    proto.type = 'V';
    proto.byteorder = '=';
    proto.flags = NPY_USE_GETITEM | NPY_USE_SETITEM;
    proto.elsize = sizeof(D);
    proto.alignment = alignof(D);
    proto.f = &funcs;
    int const number = PyArray_RegisterDataType(&proto);
    return number < 0 ? -1 : add_casts(number);
  }
  // The dtype's type number, registered on first use; -1 (NPY_NOTYPE) with an exception.
  static int typenum() {
    static int number = NPY_NOTYPE;
    if (number == NPY_NOTYPE) {
      number = find();
      if (number == NPY_NOTYPE && !PyErr_Occurred()) number = add();
      if (number < 0) number = NPY_NOTYPE;
    }
    return number;
  }
};

}  // namespace libsection
#endif
