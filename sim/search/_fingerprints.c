/* The visited set of exhaustive search as a table of 64-bit fingerprints (sim/search/visited.py).
 *
 * Open addressing, linear probing, one uint64 a slot: 0 marks an empty slot, and the fingerprint 0 is kept
 * by a flag of its own, so every 64-bit value is held exactly as a Python set of ints would hold it.  The
 * table grows by half when more than three quarters of its slots are full, so it takes from 10.7 to 16
 * bytes a fingerprint.  add() says whether the value was new: one call per successor; add_new() takes the
 * successors of one state at once, as (position, state) pairs, and fingerprints each state itself (its Python
 * hash, as hash() gives it), so a successor already seen costs no Python code at all.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MIN_CAPACITY 2  /* one fingerprint in two slots: 16 bytes, as just after any growth */

typedef struct {
    PyObject_HEAD
    uint64_t *slots;
    Py_ssize_t capacity;  /* slots */
    Py_ssize_t filled;    /* nonzero fingerprints held */
    int zero;             /* whether the fingerprint 0 is held */
} FingerprintSet;

/* A slot for a fingerprint: its bits mixed (a Python hash of a small int is the int), then scaled to the
 * capacity, which need not be a power of two. */
static inline Py_ssize_t
home(uint64_t value, Py_ssize_t capacity)
{
    uint64_t mixed = value * 0x9E3779B97F4A7C15ULL;
    mixed ^= mixed >> 29;
#ifdef __SIZEOF_INT128__
    return (Py_ssize_t)(((unsigned __int128)mixed * (uint64_t)capacity) >> 64);
#else
    return (Py_ssize_t)(mixed % (uint64_t)capacity);
#endif
}

/* Put a nonzero fingerprint in a table that has room: 1 if it was new, 0 if it was there. */
static inline int
place(uint64_t *slots, Py_ssize_t capacity, uint64_t value)
{
    Py_ssize_t i = home(value, capacity);
    for (;;) {
        uint64_t here = slots[i];
        if (here == 0) {
            slots[i] = value;
            return 1;
        }
        if (here == value)
            return 0;
        if (++i == capacity)
            i = 0;
    }
}

static int
resize(FingerprintSet *self, Py_ssize_t capacity)
{
    uint64_t *slots = PyMem_Calloc((size_t)capacity, sizeof(uint64_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->capacity; i++) {
        if (self->slots[i])
            place(slots, capacity, self->slots[i]);
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->capacity = capacity;
    return 0;
}

/* The int as 64 bits (a negative one as its two's complement), or -1 with an error set. */
static int
fingerprint_of(PyObject *arg, uint64_t *out)
{
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (overflow) {
        PyErr_SetString(PyExc_OverflowError, "a fingerprint is a 64-bit signed integer");
        return -1;
    }
    if (value == -1 && PyErr_Occurred())
        return -1;
    *out = (uint64_t)value;
    return 0;
}

/* Hold one fingerprint: 1 if it was new, 0 if it was held, -1 with an error set. */
static int
hold(FingerprintSet *self, uint64_t value)
{
    if (value == 0) {
        int added = !self->zero;
        self->zero = 1;
        return added;
    }
    if ((self->filled + 1) * 4 > self->capacity * 3) {
        if (resize(self, self->capacity + self->capacity / 2) < 0)
            return -1;
    }
    int added = place(self->slots, self->capacity, value);
    self->filled += added;
    return added;
}

static PyObject *
FingerprintSet_add(FingerprintSet *self, PyObject *arg)
{
    uint64_t value;
    if (fingerprint_of(arg, &value) < 0)
        return NULL;
    int added = hold(self, value);
    if (added < 0)
        return NULL;
    return PyBool_FromLong(added);
}

/* add_new(pairs): each pair's second item fingerprinted (its hash) and held, in order; the pairs whose
 * fingerprint was new, in order. */
static PyObject *
FingerprintSet_add_new(FingerprintSet *self, PyObject *pairs)
{
    if (!PyList_Check(pairs)) {
        PyErr_SetString(PyExc_TypeError, "add_new takes a list of (position, state) pairs");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pairs); i++) {
        PyObject *pair = PyList_GET_ITEM(pairs, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) < 2) {
            PyErr_SetString(PyExc_TypeError, "add_new takes a list of (position, state) pairs");
            Py_DECREF(out);
            return NULL;
        }
        Py_hash_t hash = PyObject_Hash(PyTuple_GET_ITEM(pair, 1));
        if (hash == -1 && PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        int added = hold(self, (uint64_t)hash);
        if (added < 0 || (added && PyList_Append(out, pair) < 0)) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

static int
FingerprintSet_contains(FingerprintSet *self, PyObject *arg)
{
    uint64_t value;
    if (fingerprint_of(arg, &value) < 0)
        return -1;
    if (value == 0)
        return self->zero;
    Py_ssize_t i = home(value, self->capacity);
    for (;;) {
        uint64_t here = self->slots[i];
        if (here == value)
            return 1;
        if (here == 0)
            return 0;
        if (++i == self->capacity)
            i = 0;
    }
}

static Py_ssize_t
FingerprintSet_len(FingerprintSet *self)
{
    return self->filled + self->zero;
}

static PyObject *
FingerprintSet_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":FingerprintSet", keywords))
        return NULL;
    FingerprintSet *self = (FingerprintSet *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->slots = PyMem_Calloc(MIN_CAPACITY, sizeof(uint64_t));
    if (self->slots == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->capacity = MIN_CAPACITY;
    return (PyObject *)self;
}

static void
FingerprintSet_dealloc(FingerprintSet *self)
{
    PyMem_Free(self->slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
FingerprintSet_sizeof(FingerprintSet *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(FingerprintSet) + self->capacity * (Py_ssize_t)sizeof(uint64_t));
}

static PyObject *
FingerprintSet_get_capacity(FingerprintSet *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->capacity);
}

static PyObject *
FingerprintSet_get_table_bytes(FingerprintSet *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->capacity * (Py_ssize_t)sizeof(uint64_t));
}

static PyMethodDef FingerprintSet_methods[] = {
    {"add", (PyCFunction)FingerprintSet_add, METH_O,
     "add(fingerprint) -> bool\n\nHold a 64-bit signed integer; True if it was not held before."},
    {"add_new", (PyCFunction)FingerprintSet_add_new, METH_O,
     "add_new(pairs) -> list\n\nHold hash(state) of each (position, state) pair of a list, in order; the pairs "
     "whose fingerprint was not held before."},
    {"__sizeof__", (PyCFunction)FingerprintSet_sizeof, METH_NOARGS, "The object's bytes and its table's."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef FingerprintSet_getset[] = {
    {"capacity", (getter)FingerprintSet_get_capacity, NULL, "Slots of the table.", NULL},
    {"table_bytes", (getter)FingerprintSet_get_table_bytes, NULL, "Bytes of the table.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods FingerprintSet_as_sequence = {
    .sq_length = (lenfunc)FingerprintSet_len,
    .sq_contains = (objobjproc)FingerprintSet_contains,
};

static PyTypeObject FingerprintSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sim.search._fingerprints.FingerprintSet",
    .tp_doc = PyDoc_STR("A set of 64-bit signed integers in one table of 8 bytes a slot, at most 3/4 full."),
    .tp_basicsize = sizeof(FingerprintSet),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = FingerprintSet_new,
    .tp_dealloc = (destructor)FingerprintSet_dealloc,
    .tp_methods = FingerprintSet_methods,
    .tp_getset = FingerprintSet_getset,
    .tp_as_sequence = &FingerprintSet_as_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sim.search._fingerprints",
    .m_doc = PyDoc_STR("The visited set's table of 64-bit fingerprints (see sim/search/visited.py)."),
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__fingerprints(void)
{
    if (PyType_Ready(&FingerprintSetType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FingerprintSetType);
    if (PyModule_AddObject(m, "FingerprintSet", (PyObject *)&FingerprintSetType) < 0) {
        Py_DECREF(&FingerprintSetType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
