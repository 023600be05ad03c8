// The Python module pyg_sar._C. It holds no functions: importing it loads the shared library,
// whose static initialisers register the torch.ops.pyg_sar.* operators with the dispatcher.
#include <Python.h>

static struct PyModuleDef pyg_sar_c_module = {
    PyModuleDef_HEAD_INIT, "_C", "Native operators of pyg_sar (see torch.ops.pyg_sar).", -1,
    nullptr, nullptr, nullptr, nullptr, nullptr};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&pyg_sar_c_module); }
