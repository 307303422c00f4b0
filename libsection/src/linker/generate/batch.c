// The runtime's batch loop: a module's C code run once per row of a batch, in one C loop, for
// vectorize_graph/Blockwise, Numba, jax.vmap and the standalone op on arrays with leading batch
// dimensions. Appended to runtime.c by `runtime_source()` (runtime.cpp); valid C and C++.
//
// What is paid once per batch: the inputs' checks (array, dtype, byte order, alignment), the
// broadcast of their batch dimensions, the core dimensions the signature names alike, the
// outputs (made for the whole batch, or given), and one array per input and output over its
// first row (a "row view"). What is paid per row: the op's own code, and `batch_next`, which
// moves every row view's data pointer on. An op that writes its output into the row view it is
// given (as ops reuse an output of the right shape) writes straight into the batch's output;
// one that makes an array of its own has it checked and copied (`batch_output`).
//
// A batch without batch dimensions is one row: the standalone op's call of an op with a
// signature, whose core dimensions are checked as a batch's are. Its arrays are their own rows
// (no view over them), and an output the op makes is the output, as in a single call.
//
// The plan is the linker's `BatchPlan`, laid out as batch_plan.h (before this file) says.
typedef struct libsection_rt_batch {
  libsection_batch head; /* what a module's loop reads: first, so the two share an address */
  npy_intp rows, row;    /* how many rows, and the one running */
  int ndim, n_in, n_cells, flags;
  const char* const* labels;
  const libsection_var* const* cells;
  npy_intp shape[NPY_MAXDIMS], index[NPY_MAXDIMS];
  PyArrayObject** arrays; /* per cell: the batch's array (an output's stays NULL until known) */
  int* core_ndim;         /* per cell */
  npy_intp* steps;        /* per cell and batch dimension: bytes to the next index (0: broadcast) */
  npy_intp* inner;        /* per cell: its step along the last batch dimension */
  npy_intp* core;         /* per cell: the core dimensions (NPY_MAXDIMS each), -1 not yet known */
  npy_intp* core_strides; /* per cell, NPY_MAXDIMS each */
} libsection_rt_batch;

/* A dtype's name as NumPy prints it ("float64"), for messages. */
static PyObject* libsection_rt_dtype_name(int typenum) {
  PyArray_Descr* descr = PyArray_DescrFromType(typenum);
  PyObject* name = descr ? PyObject_Str((PyObject*)descr) : NULL;
  Py_XDECREF(descr);
  if (!name) {
    PyErr_Clear();
    name = PyUnicode_FromFormat("dtype %d", typenum);
  }
  return name;
}

/* A shape as Python prints a tuple: (2, 3), (5,), (). */
static PyObject* libsection_rt_shape_text(const npy_intp* dims, int nd) {
  PyObject* items = PyTuple_New(nd);
  PyObject* text;
  int i;
  if (!items) return NULL;
  for (i = 0; i < nd; ++i) PyTuple_SET_ITEM(items, i, PyLong_FromSsize_t((Py_ssize_t)dims[i]));
  text = PyObject_Repr(items);
  Py_DECREF(items);
  return text;
}

static int libsection_rt_is_scalar_cell(const libsection_rt_batch* b, int c) {
  return LIBSECTION_RT_IS_SCALAR(b->cells[c]);
}

/* 0 when `a` has the dtype cell `c` declares, in native byte order, and is aligned; -1 with a
   TypeError otherwise. */
static int libsection_rt_batch_dtype(libsection_rt_batch* b, int c, PyArrayObject* a,
                                     const char* what, int j) {
  int const want = b->cells[c]->typenum;
  PyObject *got, *wanted;
  if (PyArray_EquivTypenums(PyArray_TYPE(a), want) && !PyArray_ISBYTESWAPPED(a)) {
    if (PyArray_ISALIGNED(a)) return 0;
    PyErr_Format(PyExc_TypeError, "%s: %s %d: the array's data is not aligned for its dtype",
                 b->labels[0], what, j);
    return -1;
  }
  got = PyObject_Str((PyObject*)PyArray_DESCR(a));
  wanted = libsection_rt_dtype_name(want);
  if (got && wanted)
    PyErr_Format(PyExc_TypeError, "%s: %s %d is a %U array%s; the op takes %U", b->labels[0], what,
                 j, got, PyArray_ISBYTESWAPPED(a) ? " in non-native byte order" : "", wanted);
  Py_XDECREF(got);
  Py_XDECREF(wanted);
  return -1;
}

/* The core dimensions of every input against the signature: a fixed length must be that length,
   and dimensions of one name the same length. Fills `names` (per dimension name: its length, or
   -1 when no input has it). */
static int libsection_rt_batch_core_dims(libsection_rt_batch* b, const long long* const* dims,
                                         npy_intp* names, int* named_by) {
  int i, k;
  for (i = 0; i < b->n_in; ++i) {
    int const nd = b->core_ndim[i];
    for (k = 0; k < nd; ++k) {
      long long const e = dims[i][k];
      npy_intp const length = b->core[i * NPY_MAXDIMS + k];
      if (e < 0 && length != (npy_intp)(-e - 1)) {
        PyErr_Format(PyExc_ValueError,
                     "%s: input %d's core dimension %d has length %zd, the signature %s fixes it "
                     "at %lld",
                     b->labels[0], i, k, (Py_ssize_t)length, b->labels[1], -e - 1);
        return -1;
      }
      if (e < 0) continue;
      if (names[e] < 0) {
        names[e] = length;
        named_by[e] = i;
      } else if (names[e] != length) {
        PyErr_Format(PyExc_ValueError,
                     "%s: core dimension %s is %zd in input %d but %zd in input %d (signature %s)",
                     b->labels[0], b->labels[2 + e], (Py_ssize_t)names[e], named_by[e],
                     (Py_ssize_t)length, i, b->labels[1]);
        return -1;
      }
    }
  }
  return 0;
}

/* The batch shape: the inputs' batch dimensions broadcast together (NumPy's rule: aligned on the
   right, a length of 1 stretches; with LIBSECTION_BATCH_STRICT only where the input's mask says,
   PyTensor's Blockwise rule), and the steps each input moves by along them. */
static int libsection_rt_batch_shape(libsection_rt_batch* b, PyArrayObject* const* in,
                                     const long long* masks) {
  int i, d;
  for (d = 0; d < b->ndim; ++d) b->shape[d] = 1;
  for (i = 0; i < b->n_in; ++i) {
    int const own = PyArray_NDIM(in[i]) - b->core_ndim[i], skip = b->ndim - own;
    for (d = 0; d < own; ++d) {
      npy_intp const length = PyArray_DIMS(in[i])[d];
      npy_intp* const shape = &b->shape[skip + d];
      if (length == 1 || length == *shape) continue;
      if (*shape == 1) {
        *shape = length;
        continue;
      }
      PyObject* mine = libsection_rt_shape_text(PyArray_DIMS(in[i]), own);
      if (mine)
        PyErr_Format(PyExc_ValueError,
                     "%s: the batch dimensions %U of input %d do not broadcast with the other "
                     "inputs' (length %zd where another has %zd)",
                     b->labels[0], mine, i, (Py_ssize_t)length, (Py_ssize_t)*shape);
      Py_XDECREF(mine);
      return -1;
    }
  }
  for (i = 0; i < b->n_in; ++i) {
    int const own = PyArray_NDIM(in[i]) - b->core_ndim[i], skip = b->ndim - own;
    for (d = 0; d < b->ndim; ++d) {
      npy_intp* const step = &b->steps[i * b->ndim + d];
      npy_intp const length = d < skip ? 1 : PyArray_DIMS(in[i])[d - skip];
      *step = length == 1 ? 0 : PyArray_STRIDES(in[i])[d - skip];
      if ((b->flags & LIBSECTION_BATCH_STRICT) && length == 1 && b->shape[d] != 1 &&
          !(masks[i] >> d & 1)) {
        PyErr_SetString(PyExc_ValueError,
                        "Runtime broadcasting not allowed. At least one input has a distinct "
                        "batch dimension length of 1, but was not marked as broadcastable.\nIf "
                        "broadcasting was intended, use `specify_broadcastable` on the relevant "
                        "input.");
        return -1;
      }
    }
  }
  return 0;
}

/* An array over cell `c`'s row at `data` (or, for a whole batch, over all of it), which keeps
   the batch's array alive. */
static PyObject* libsection_rt_row_view(libsection_rt_batch* b, int c, char* data) {
  PyArrayObject* a = b->arrays[c];
  npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
  int const core = b->core_ndim[c];
  int const whole = b->flags & LIBSECTION_BATCH_WHOLE;
  int const nd = whole ? b->ndim + core : core;
  int k;
  PyObject* view;
  for (k = 0; k < nd; ++k) {
    int const in_core = k - (nd - core);
    dims[k] = in_core >= 0 ? b->core[c * NPY_MAXDIMS + in_core] : b->shape[k];
    strides[k] =
        in_core >= 0 ? b->core_strides[c * NPY_MAXDIMS + in_core] : b->steps[c * b->ndim + k];
  }
  Py_INCREF(PyArray_DESCR(a));
  view = PyArray_NewFromDescr(&PyArray_Type, PyArray_DESCR(a), nd, dims, strides, data,
                              PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE, NULL);
  if (!view) return NULL;
  Py_INCREF(a);
  if (PyArray_SetBaseObject((PyArrayObject*)view, (PyObject*)a) < 0) {
    Py_DECREF(view);
    return NULL;
  }
  return view;
}

/* The array cell `c`'s row reaches the op as: a row view, or, in a batch of one row, the cell's
   array itself (a new reference either way). */
static PyObject* libsection_rt_cell_view(libsection_rt_batch* b, int c, char* data) {
  if (b->ndim == 0) {
    Py_INCREF(b->arrays[c]);
    return (PyObject*)b->arrays[c];
  }
  return libsection_rt_row_view(b, c, data);
}

/* Cell `c`'s array is known (given, made, or taken from the first row): its steps, its core
   dimensions and strides, and its row view. */
static int libsection_rt_batch_cell(libsection_rt_batch* b, int c, PyArrayObject* a) {
  int const core = b->core_ndim[c], own = PyArray_NDIM(a) - core;
  int d;
  b->arrays[c] = a;
  if (c >= b->n_in) {
    for (d = 0; d < b->ndim; ++d) b->steps[c * b->ndim + d] = PyArray_STRIDES(a)[d];
    if (b->ndim) b->inner[c] = PyArray_STRIDES(a)[b->ndim - 1];
  }
  for (d = 0; d < core; ++d) {
    b->core[c * NPY_MAXDIMS + d] = PyArray_DIMS(a)[own + d];
    b->core_strides[c * NPY_MAXDIMS + d] = PyArray_STRIDES(a)[own + d];
  }
  b->head.data[c] = PyArray_BYTES(a);
  for (d = 0; d < b->ndim && !(b->flags & LIBSECTION_BATCH_WHOLE); ++d)
    b->head.data[c] += b->index[d] * b->steps[c * b->ndim + d];
  if (libsection_rt_is_scalar_cell(b, c)) return 0;
  b->head.views[c] = libsection_rt_cell_view(b, c, b->head.data[c]);
  return b->head.views[c] ? 0 : -1;
}

/* A row view of cell `c` the op keeps past its row (its struct holds it) over memory no Python
   object owns (an XLA buffer the JAX handler wraps, which XLA frees or reuses once the call is
   over) gets a copy of its row, kept alive as its base. Over memory an array owns, the view
   keeps that array alive and needs nothing. */
static int libsection_rt_keep_row(libsection_rt_batch* b, int c) {
  PyArrayObject* const a = b->arrays[c];
  PyArrayObject_fields* const view = (PyArrayObject_fields*)b->head.views[c];
  PyObject* copy;
  if (PyArray_BASE(a) != NULL || PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA)) return 0;
  copy = PyArray_NewCopy((PyArrayObject*)view, NPY_CORDER);
  if (!copy) return -1;
  view->data = PyArray_BYTES((PyArrayObject*)copy);
  memcpy(view->strides, PyArray_STRIDES((PyArrayObject*)copy), (size_t)view->nd * sizeof(npy_intp));
  Py_DECREF(view->base);
  view->base = copy;
  PyArray_UpdateFlags((PyArrayObject*)view, NPY_ARRAY_UPDATE_ALL);
  return 0;
}

/* After the rows: every row view the op still keeps is given its own row where it must be
   (`libsection_rt_keep_row`). An exception already set (a failed row) is kept. */
static int libsection_rt_batch_let_go(libsection_rt_batch* b) {
  PyObject *type, *value, *traceback;
  int c, failed = 0;
  PyErr_Fetch(&type, &value, &traceback);
  for (c = 0; c < b->n_cells && !failed; ++c)
    if (b->head.views[c] && b->head.views[c] != (PyObject*)b->arrays[c] &&
        Py_REFCNT(b->head.views[c]) != 1)
      failed = libsection_rt_keep_row(b, c);
  if (type) {
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
  }
  return failed;
}

/* A new row view for cell `c`, in place of one the op kept a reference to (it stays the op's,
   over the row it was given). */
static int libsection_rt_fresh_view(libsection_rt_batch* b, int c) {
  PyObject* view = libsection_rt_row_view(b, c, b->head.data[c]);
  if (!view) return -1;
  Py_DECREF(b->head.views[c]);
  b->head.views[c] = view;
  return 0;
}

/* The next row: 0 when it is ready; otherwise 1, either because the last row has run or, with
   `*failure` set to -1 and an exception, because a row view could not be made. */
static int libsection_rt_batch_next(libsection_batch* head, int* failure) {
  libsection_rt_batch* b = (libsection_rt_batch*)head;
  int c, d = b->ndim - 1;
  if (++b->row >= b->rows) return 1;
  if (++b->index[d] < b->shape[d]) { /* the common case: along the last batch dimension */
    for (c = 0; c < b->n_cells; ++c) head->data[c] += b->inner[c];
  } else {
    do { /* back to the dimension's start, then carry */
      b->index[d] = 0;
      for (c = 0; c < b->n_cells; ++c)
        head->data[c] -= b->steps[c * b->ndim + d] * (b->shape[d] - 1);
      --d;
    } while (++b->index[d] == b->shape[d]);
    for (c = 0; c < b->n_cells; ++c) head->data[c] += b->steps[c * b->ndim + d];
  }
  for (c = 0; c < b->n_cells; ++c) {
    PyObject* const view = head->views[c];
    if (!view) continue;
    if (Py_REFCNT(view) != 1 && (libsection_rt_keep_row(b, c) || libsection_rt_fresh_view(b, c))) {
      *failure = -1;
      return 1;
    }
    ((PyArrayObject_fields*)head->views[c])->data = head->data[c];
  }
  return 0;
}

/* The length the batch's output `c` has along its dimension `k` (of `nd`): a batch dimension,
   or a core one (-1 while not yet known). */
static npy_intp libsection_rt_output_length(const libsection_rt_batch* b, int c, int nd, int k) {
  int const batch_nd = nd - b->core_ndim[c];
  return k < batch_nd ? b->shape[k] : b->core[c * NPY_MAXDIMS + k - batch_nd];
}

/* 0 when `a`, the op's array for output `c`, has the shape of its row (of the whole batch's
   output, for a whole batch); -1 with a ValueError naming both shapes otherwise. */
static int libsection_rt_output_shape(libsection_rt_batch* b, int c, PyArrayObject* a, int nd) {
  npy_intp want[NPY_MAXDIMS];
  PyObject *got, *wanted;
  int same = PyArray_NDIM(a) == nd, k;
  for (k = 0; same && k < nd; ++k) {
    npy_intp const length = libsection_rt_output_length(b, c, nd, k);
    same = length < 0 || PyArray_DIMS(a)[k] == length;
  }
  if (same) return 0;
  for (k = 0; k < nd; ++k) want[k] = libsection_rt_output_length(b, c, nd, k);
  got = libsection_rt_shape_text(PyArray_DIMS(a), PyArray_NDIM(a));
  wanted = libsection_rt_shape_text(want, nd);
  if (got && wanted)
    PyErr_Format(PyExc_ValueError, "%s: output %d has shape %U, where the batch's output %s %U",
                 b->labels[0], c - b->n_in, got,
                 b->flags & LIBSECTION_BATCH_WHOLE ? "is" : "rows are", wanted);
  Py_XDECREF(got);
  Py_XDECREF(wanted);
  return -1;
}

/* The first row's array `a` for output `c` sets the output's core shape: the batch's output is
   made, and the row copied into its first row view. */
static int libsection_rt_first_output(libsection_rt_batch* b, int c, PyArrayObject* a) {
  npy_intp dims[NPY_MAXDIMS];
  int const core = b->core_ndim[c];
  int k;
  PyArrayObject* made;
  for (k = 0; k < b->ndim; ++k) dims[k] = b->shape[k];
  for (k = 0; k < core; ++k) dims[b->ndim + k] = PyArray_DIMS(a)[k];
  made = (PyArrayObject*)PyArray_EMPTY(b->ndim + core, dims, b->cells[c]->typenum, 0);
  if (!made || libsection_rt_batch_cell(b, c, made)) return -1;
  return PyArray_CopyInto((PyArrayObject*)b->head.views[c], a);
}

/* The op's own array `a` for output `c`, checked, put into the batch's output. */
static int libsection_rt_take_output(libsection_rt_batch* b, int c, PyArrayObject* a) {
  int const whole = b->flags & LIBSECTION_BATCH_WHOLE;
  int const nd = whole ? b->ndim + b->core_ndim[c] : b->core_ndim[c];
  if (libsection_rt_batch_dtype(b, c, a, "output", c - b->n_in) ||
      libsection_rt_output_shape(b, c, a, nd))
    return -1;
  if ((whole || b->ndim == 0) && !b->arrays[c]) { /* the op's own array is the output */
    Py_INCREF(a);
    return libsection_rt_batch_cell(b, c, a);
  }
  if (b->arrays[c])
    return PyArray_CopyInto(whole ? b->arrays[c] : (PyArrayObject*)b->head.views[c], a);
  return libsection_rt_first_output(b, c, a); /* the first row: now the core shape is known */
}

/* An output the op made rather than writing it into its row view (or that it left NULL): checked
   and copied into the batch's output; the first row's sets the output's core shape when the
   signature does not. `*value` is released either way. 0, or -1 with an exception. */
static int libsection_rt_batch_output(libsection_batch* head, int c, PyObject** value, int failed) {
  libsection_rt_batch* b = (libsection_rt_batch*)head;
  PyObject* v = *value;
  int result = -1;
  *value = NULL;
  if (failed || v == head->views[c]) {
    Py_XDECREF(v);
    return 0;
  }
  if (!v) {
    PyErr_Format(PyExc_RuntimeError, "%s: the op's C code left output %d NULL", b->labels[0],
                 c - b->n_in);
    return -1;
  }
  if (PyArray_Check(v)) result = libsection_rt_take_output(b, c, (PyArrayObject*)v);
  else
    PyErr_Format(PyExc_TypeError, "%s: output %d is a %s, not an array", b->labels[0], c - b->n_in,
                 Py_TYPE(v)->tp_name);
  Py_DECREF(v);
  return result;
}

/* The failing row named in the exception: its message becomes "<op>: row r of the batch (index
   (i, j)): <message>" when its arguments are one string (the message's own "<op>: " dropped, as
   the runtime's messages start), a note otherwise. */
static void libsection_rt_name_row(libsection_rt_batch* b) {
  PyObject *type, *value, *traceback, *index, *where, *args;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  index = libsection_rt_shape_text(b->index, b->ndim);
  where = index ? PyUnicode_FromFormat("row %zd of the batch (index %U)", (Py_ssize_t)b->row, index)
                : NULL;
  args = value && where ? PyObject_GetAttrString(value, "args") : NULL;
  if (args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
      PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyObject* message = PyTuple_GET_ITEM(args, 0);
    PyObject* own = PyUnicode_FromFormat("%s: ", b->labels[0]);
    Py_ssize_t const skip = own && PyUnicode_Tailmatch(message, own, 0, PY_SSIZE_T_MAX, -1) == 1
                                ? PyUnicode_GET_LENGTH(own)
                                : 0;
    PyObject* rest = PyUnicode_Substring(message, skip, PY_SSIZE_T_MAX);
    PyObject* text = rest ? PyUnicode_FromFormat("%s: %U: %U", b->labels[0], where, rest) : NULL;
    Py_XDECREF(rest);
    Py_XDECREF(own);
    PyObject* named = text ? PyTuple_Pack(1, text) : NULL;
    if (named) PyObject_SetAttrString(value, "args", named);
    Py_XDECREF(named);
    Py_XDECREF(text);
  } else if (value && where) {
    PyObject* note = PyUnicode_FromFormat("in %s, %U", b->labels[0], where);
    PyObject* done = note ? PyObject_CallMethod(value, "add_note", "O", note) : NULL;
    Py_XDECREF(done);
    Py_XDECREF(note);
  }
  PyErr_Clear(); /* naming the row failed: the exception stays as the op raised it */
  Py_XDECREF(args);
  Py_XDECREF(where);
  Py_XDECREF(index);
  PyErr_Restore(type, value, traceback);
}

/* Checks a given output (JAX's result buffer): the dtype, the batch shape, writable, aligned. */
static int libsection_rt_batch_preset(libsection_rt_batch* b, int c, PyObject* given,
                                      const npy_intp* known) {
  PyArrayObject* a = (PyArrayObject*)given;
  int const j = c - b->n_in, core = b->core_ndim[c];
  int same, k;
  if (!PyArray_Check(given)) {
    PyErr_Format(PyExc_TypeError, "%s: the array given for output %d is a %s", b->labels[0], j,
                 Py_TYPE(given)->tp_name);
    return -1;
  }
  if (libsection_rt_batch_dtype(b, c, a, "output", j)) return -1;
  same = PyArray_NDIM(a) == b->ndim + core && PyArray_ISWRITEABLE(a);
  for (k = 0; same && k < b->ndim + core; ++k) {
    npy_intp const want = k < b->ndim ? b->shape[k] : known[k - b->ndim];
    same = want < 0 || PyArray_DIMS(a)[k] == want;
  }
  if (!same) {
    PyObject* got = libsection_rt_shape_text(PyArray_DIMS(a), PyArray_NDIM(a));
    if (got)
      PyErr_Format(PyExc_ValueError,
                   "%s: the array given for output %d (shape %U%s) does not fit the batch",
                   b->labels[0], j, got, PyArray_ISWRITEABLE(a) ? "" : ", read-only");
    Py_XDECREF(got);
    return -1;
  }
  Py_INCREF(given);
  return libsection_rt_batch_cell(b, c, a);
}

static void libsection_rt_batch_free(libsection_rt_batch* b, int keep_outputs) {
  int c;
  for (c = 0; c < b->n_cells; ++c) {
    Py_XDECREF(b->head.views[c]);
    if (c < b->n_in || !keep_outputs) Py_XDECREF(b->arrays[c]);
  }
  PyMem_Free(b->head.views);
}

/* The per-cell arrays of `b`, in one block (PyMem_Calloc'd, freed by batch_free). */
static int libsection_rt_batch_alloc(libsection_rt_batch* b, int n_cells) {
  size_t const per_cell =
      3 * sizeof(void*) + sizeof(int) + ((size_t)NPY_MAXDIMS * 3 + 1) * sizeof(npy_intp);
  char* const block = (char*)PyMem_Calloc((size_t)n_cells, per_cell);
  if (!block) {
    PyErr_NoMemory();
    return -1;
  }
  b->head.views = (PyObject**)block;
  b->head.data = (char**)(block + (size_t)n_cells * sizeof(void*));
  b->arrays = (PyArrayObject**)(block + 2 * (size_t)n_cells * sizeof(void*));
  b->steps = (npy_intp*)(block + 3 * (size_t)n_cells * sizeof(void*));
  b->core = b->steps + (size_t)n_cells * NPY_MAXDIMS;
  b->core_strides = b->core + (size_t)n_cells * NPY_MAXDIMS;
  b->inner = b->core_strides + (size_t)n_cells * NPY_MAXDIMS;
  b->core_ndim = (int*)(b->inner + n_cells);
  b->n_cells = n_cells;
  return 0;
}

/* The plan's cells (see the top of this file): each cell's core ndim into `b`, where its core
   dimensions start into `dims`, and each input's broadcast mask into `masks`. */
static void libsection_rt_batch_read_plan(libsection_rt_batch* b, const long long* plan,
                                          const long long** dims, long long* masks) {
  const long long* p = plan + LIBSECTION_BATCH_CELLS;
  int c;
  for (c = 0; c < b->n_cells; ++c) {
    b->core_ndim[c] = (int)*p++;
    dims[c] = p;
    p += b->core_ndim[c];
    if (c < b->n_in) masks[c] = *p++;
  }
}

/* Input `c`: an array of its declared dtype (`given`, or what NumPy converts it to) with at least
   its core dimensions, whose core dimensions and strides are noted; the batch's ndim grows to
   its batch dimensions. */
static int libsection_rt_batch_input(libsection_rt_batch* b, int c, PyObject* given) {
  PyArrayObject* a;
  int nd, core, d;
  if (PyArray_Check(given)) Py_INCREF(given);
  else if (!(given = PyArray_FromAny(given, NULL, 0, 0, 0, NULL))) return -1;
  a = b->arrays[c] = (PyArrayObject*)given;
  if (libsection_rt_batch_dtype(b, c, a, "input", c)) return -1;
  nd = PyArray_NDIM(a);
  core = b->core_ndim[c];
  if (nd < core) {
    PyErr_Format(PyExc_ValueError,
                 "%s: input %d has %d dimensions; its core dimensions in the signature %s need %d",
                 b->labels[0], c, nd, b->labels[1], core);
    return -1;
  }
  if (nd - core > b->ndim) b->ndim = nd - core;
  for (d = 0; d < core; ++d) {
    b->core[c * NPY_MAXDIMS + d] = PyArray_DIMS(a)[nd - core + d];
    b->core_strides[c * NPY_MAXDIMS + d] = PyArray_STRIDES(a)[nd - core + d];
  }
  return 0;
}

/* Every cell's batch and core dimensions fit in a NumPy array. */
static int libsection_rt_batch_fits_numpy(const libsection_rt_batch* b) {
  int c;
  for (c = 0; c < b->n_cells; ++c)
    if (b->ndim + b->core_ndim[c] > NPY_MAXDIMS) {
      PyErr_Format(PyExc_ValueError, "%s: %d batch and %d core dimensions are more than NumPy's %d",
                   b->labels[0], b->ndim, b->core_ndim[c], NPY_MAXDIMS);
      return -1;
    }
  return 0;
}

/* The inputs' first rows, once the batch shape is known: the number of rows, each input's step
   along the last batch dimension, its data pointer and its row view. */
static int libsection_rt_batch_first_inputs(libsection_rt_batch* b) {
  int const whole = b->flags & LIBSECTION_BATCH_WHOLE;
  int c, d;
  b->rows = 1;
  for (d = 0; d < b->ndim && !whole; ++d) b->rows *= b->shape[d];
  for (c = 0; c < b->n_in && b->ndim; ++c) b->inner[c] = b->steps[c * b->ndim + b->ndim - 1];
  for (c = 0; c < b->n_in; ++c) {
    b->head.data[c] = PyArray_BYTES(b->arrays[c]);
    if (whole && b->ndim && libsection_rt_is_scalar_cell(b, c)) {
      PyErr_Format(PyExc_TypeError, "%s: input %d is a scalar, which cannot take a whole batch",
                   b->labels[0], c);
      return -1;
    }
    if (!libsection_rt_is_scalar_cell(b, c) &&
        !(b->head.views[c] = libsection_rt_cell_view(b, c, b->head.data[c])))
      return -1;
  }
  return 0;
}

/* Output `c` before the first row: `given` (checked), or made when the signature gives its core
   shape (`dims`, against the dimension names' lengths `names`), or left to the first row. */
static int libsection_rt_batch_prepare_output(libsection_rt_batch* b, int c, PyObject* given,
                                              const long long* dims, const npy_intp* names) {
  npy_intp* const known = &b->core[c * NPY_MAXDIMS];
  int const j = c - b->n_in, core = b->core_ndim[c];
  /* Made here: a batch's rows are written into it; one row's array is the op's own, as in a
     single call, but for a scalar, whose value needs an array to go to. */
  int const made_here =
      b->ndim ? !(b->flags & LIBSECTION_BATCH_WHOLE) : libsection_rt_is_scalar_cell(b, c);
  int all_known = 1, k;
  for (k = 0; k < core; ++k) {
    known[k] = dims[k] < 0 ? (npy_intp)(-dims[k] - 1) : names[dims[k]];
    all_known &= known[k] >= 0;
  }
  if (given) return libsection_rt_batch_preset(b, c, given, known);
  if (all_known && made_here) {
    npy_intp full[NPY_MAXDIMS];
    PyArrayObject* made;
    for (k = 0; k < b->ndim; ++k) full[k] = b->shape[k];
    for (k = 0; k < core; ++k) full[b->ndim + k] = known[k];
    made = (PyArrayObject*)PyArray_EMPTY(b->ndim + core, full, b->cells[c]->typenum, 0);
    return made ? libsection_rt_batch_cell(b, c, made) : -1;
  }
  if (libsection_rt_is_scalar_cell(b, c)) {
    PyErr_Format(PyExc_TypeError, "%s: output %d is a scalar, which cannot hold a whole batch",
                 b->labels[0], j);
    return -1;
  }
  if (b->rows == 0) {
    PyErr_Format(PyExc_ValueError,
                 "%s: the batch is empty and output %d's core shape is not known without "
                 "running the op (the signature %s does not give it)",
                 b->labels[0], j, b->labels[1]);
    return -1;
  }
  return 0;
}

/* Everything the rows need, paid once per batch: the inputs checked, the batch shape and core
   dimensions agreed, the first rows' views, the outputs given or made. 0, or -1 with an
   exception. */
static int libsection_rt_batch_prepare(libsection_rt_batch* b, PyObject* const* inputs,
                                       PyObject* const* outputs, const long long* plan) {
  const long long* dims[LIBSECTION_BATCH_MAX];
  long long masks[LIBSECTION_BATCH_MAX];
  npy_intp names[LIBSECTION_BATCH_MAX];
  int named_by[LIBSECTION_BATCH_MAX];
  int c, k;
  libsection_rt_batch_read_plan(b, plan, dims, masks);
  for (k = 0; k < plan[LIBSECTION_BATCH_NAMES]; ++k) names[k] = -1;
  for (c = 0; c < b->n_in; ++c)
    if (libsection_rt_batch_input(b, c, inputs[c])) return -1;
  if (libsection_rt_batch_fits_numpy(b) ||
      libsection_rt_batch_shape(b, (PyArrayObject* const*)b->arrays, masks) ||
      libsection_rt_batch_core_dims(b, dims, names, named_by) ||
      libsection_rt_batch_first_inputs(b))
    return -1;
  for (c = b->n_in; c < b->n_cells; ++c)
    if (libsection_rt_batch_prepare_output(b, c, outputs[c - b->n_in], dims[c], names)) return -1;
  return 0;
}

/* After the rows ran: `failed` (the rows' result) with an exception that names the failing row,
   or an output no row made; 0 when every output is there. */
static int libsection_rt_batch_check_run(libsection_rt_batch* b, int failed) {
  int c;
  if (failed && !PyErr_Occurred())
    PyErr_Format(PyExc_RuntimeError, "%s failed (code %d) without setting an exception",
                 b->labels[0], failed);
  if (failed && b->ndim && !(b->flags & LIBSECTION_BATCH_WHOLE)) libsection_rt_name_row(b);
  if (failed) return failed;
  for (c = b->n_in; c < b->n_cells; ++c)
    if (!b->arrays[c]) {
      PyErr_Format(PyExc_RuntimeError, "%s: output %d was not made", b->labels[0], c - b->n_in);
      return -1;
    }
  return 0;
}

/* Runs the module's `rows` over the batch: `inputs` (n_in arrays, or values NumPy converts),
   `outputs` (n_out entries, each NULL or an array to write into) become new references to the
   batch's outputs. 0, or -1 with an exception naming the failing row; then `outputs` is as given
   and nothing the batch wrote is handed out. */
static int libsection_rt_run_batch(void* self, int (*rows)(void*, libsection_batch*),
                                   const libsection_var* const* cells, int n_in, int n_out,
                                   PyObject* const* inputs, PyObject** outputs,
                                   const long long* plan, const char* const* labels) {
  libsection_rt_batch b;
  int const n_cells = n_in + n_out;
  int c, failed = -1;
  if (n_cells > LIBSECTION_BATCH_MAX || plan[LIBSECTION_BATCH_NAMES] > LIBSECTION_BATCH_MAX) {
    PyErr_Format(PyExc_ValueError, "%s: a batch of more than 64 inputs and outputs", labels[0]);
    return -1;
  }
  memset(&b, 0, sizeof b);
  if (libsection_rt_batch_alloc(&b, n_cells)) return -1;
  b.flags = (int)plan[LIBSECTION_BATCH_FLAGS];
  b.n_in = n_in;
  b.cells = cells;
  b.labels = labels;
  if (libsection_rt_batch_prepare(&b, inputs, outputs, plan) == 0)
    failed = libsection_rt_batch_check_run(&b, b.rows ? rows(self, &b.head) : 0);
  if (libsection_rt_batch_let_go(&b) && !failed) failed = -1;
  /* One row's scalar output is a number, as a single call's is. */
  for (c = n_in; c < n_cells && !failed; ++c)
    outputs[c - n_in] = b.ndim || !libsection_rt_is_scalar_cell(&b, c)
                            ? (PyObject*)b.arrays[c]
                            : PyArray_Return(b.arrays[c]);
  libsection_rt_batch_free(&b, !failed);
  return failed ? -1 : 0;
}
