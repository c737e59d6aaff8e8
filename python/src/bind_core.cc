// sylva.Error, dtypes, Device, Tensor (buffer protocol, DLPack, NumPy
// views), from_dlpack, and the keyword-argument helper of the options.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "bindings.h"

namespace sylva::python {

DType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "f32") return DType::f32;
  if (name == "float64" || name == "f64") return DType::f64;
  if (name == "int32" || name == "i32") return DType::i32;
  SYLVA_THROW("[python] unknown dtype '", name, "' (float32, float64 or int32)");
}

BatchingPolicy parse_policy(const std::string& name) {
  if (name == "bfs") return BatchingPolicy::Bfs;
  if (name == "serial") return BatchingPolicy::Serial;
  SYLVA_THROW("[python] unknown batching policy '", name, "' (bfs or serial)");
}

namespace {

nb::dlpack::dtype dlpack_dtype(DType t) {
  switch (t) {
    case DType::f32: return nb::dtype<float>();
    case DType::f64: return nb::dtype<double>();
    case DType::i32: return nb::dtype<int32_t>();
    case DType::bf16: SYLVA_THROW("[python] bfloat16 values have no numpy type; Sylva keeps them internal");
  }
  SYLVA_THROW("[python] unknown dtype");
}

DType from_dlpack_dtype(nb::dlpack::dtype d, const std::string& what) {
  if (d == nb::dtype<float>()) return DType::f32;
  if (d == nb::dtype<double>()) return DType::f64;
  if (d == nb::dtype<int32_t>()) return DType::i32;
  SYLVA_THROW("[python] ", what, ": unsupported element type (code ", static_cast<int>(d.code), ", ",
              static_cast<int>(d.bits), " bits); Sylva holds float32, float64 and int32");
}

std::vector<size_t> extents(const Tensor& t) {
  std::vector<size_t> s;
  for (int64_t d : t.shape().dims()) s.push_back(static_cast<size_t>(d));
  return s;
}

// ---- the buffer protocol of Tensor and Parameter ------------------------

struct BufferInfo {
  std::vector<Py_ssize_t> shape, strides;
};

int fill_buffer(const Tensor& t, PyObject* self, Py_buffer* view, int flags) {
  if (!t.defined()) {
    PyErr_SetString(PyExc_BufferError, "[tensor] an undefined tensor has no buffer");
    return -1;
  }
  auto* info = new BufferInfo;
  Py_ssize_t stride = static_cast<Py_ssize_t>(dtype_size(t.dtype()));
  const std::vector<int64_t>& dims = t.shape().dims();
  info->shape.assign(dims.begin(), dims.end());
  info->strides.resize(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    info->strides[i] = stride;
    stride *= static_cast<Py_ssize_t>(dims[i]);
  }
  static char f32[] = "f", f64[] = "d", i32[] = "i";
  view->buf = const_cast<void*>(t.raw());
  view->obj = self;
  Py_INCREF(self);
  view->len = static_cast<Py_ssize_t>(t.nbytes());
  view->readonly = 0;
  view->itemsize = static_cast<Py_ssize_t>(dtype_size(t.dtype()));
  view->format = (flags & PyBUF_FORMAT) ? (t.dtype() == DType::f32 ? f32 : t.dtype() == DType::f64 ? f64 : i32)
                                        : nullptr;
  view->ndim = static_cast<int>(dims.size());
  view->shape = (flags & PyBUF_ND) ? info->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? info->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = info;
  return 0;
}

void release_buffer(PyObject*, Py_buffer* view) { delete static_cast<BufferInfo*>(view->internal); }

int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  return fill_buffer(nb::cast<const Tensor&>(nb::handle(self)), self, view, flags);
}

int parameter_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  return fill_buffer(nb::cast<const Parameter&>(nb::handle(self)).value, self, view, flags);
}

PyType_Slot tensor_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                              {0, nullptr}};
PyType_Slot parameter_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(parameter_getbuffer)},
                                 {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                                 {0, nullptr}};

// ---- DLPack ---------------------------------------------------------------

nb::tuple dlpack_device(const Tensor&) { return nb::make_tuple(1, 0); }  // kDLCPU, device 0

// A Tensor sharing an array-like's memory; the array stays alive while any
// copy of the tensor does (released under the GIL, from whatever thread).
Tensor from_dlpack(nb::ndarray<nb::device::cpu, nb::c_contig> a) {
  const DType dtype = from_dlpack_dtype(a.dtype(), "from_dlpack");
  std::vector<int64_t> dims;
  for (size_t i = 0; i < a.ndim(); ++i) dims.push_back(static_cast<int64_t>(a.shape(i)));
  auto* held = new nb::ndarray<>(a);
  std::shared_ptr<void> owner(held, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::ndarray<>*>(p);
  });
  return Tensor::wrap(a.data(), Shape(std::move(dims)), dtype, std::move(owner));
}

std::string tensor_repr(const Tensor& t) {
  if (!t.defined()) return "sylva.Tensor(undefined)";
  return "sylva.Tensor(shape=" + t.shape().str() + ", dtype=" + std::string(dtype_name(t.dtype())) + ")";
}

void bind_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor", nb::type_slots(tensor_buffer_slots()),
                     "A dense row-major host tensor. Copies share storage; clone() copies. Implements the buffer "
                     "protocol and DLPack: numpy.asarray(t) and numpy.from_dlpack(t) share its memory.")
      .def(nb::init<>())
      .def("__init__",
           [](Tensor* t, const std::vector<int64_t>& shape, const std::string& dtype) {
             new (t) Tensor(Shape(shape), parse_dtype(dtype));
           },
           nb::arg("shape"), nb::arg("dtype") = "float32", "A zero-filled tensor.")
      .def_prop_ro("shape", [](const Tensor& t) { return t.shape().dims(); })
      .def_prop_ro("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_prop_ro("defined", &Tensor::defined)
      .def_prop_ro("device", [](const Tensor&) { return std::string("cpu"); })
      .def("numel", &Tensor::numel)
      .def("nbytes", &Tensor::nbytes)
      .def("clone", &Tensor::clone)
      .def("fill_zero", &Tensor::fill_zero)
      .def("copy_from", [](Tensor& t, nb::handle src) { copy_into(t, src, "tensor"); }, nb::arg("src"),
           "Copies an array-like of the same shape and dtype into this tensor.")
      .def("numpy", [](nb::handle self) {
             return nb::ndarray<nb::numpy>(view_of(nb::cast<const Tensor&>(self), self));
           }, "A NumPy array sharing this tensor's memory.")
      .def("__dlpack__", [](nb::handle self, const nb::kwargs& kw) {
             return dlpack_of(nb::cast<const Tensor&>(self), self, kw);
           })
      .def("__dlpack_device__", &dlpack_device)
      .def("__repr__", &tensor_repr);
  m.def("from_dlpack", &from_dlpack, nb::arg("array").noconvert(),
        "A sylva.Tensor sharing the memory of a C-contiguous CPU array (anything with __dlpack__ or the buffer "
        "protocol: NumPy, PyTorch CPU tensors) of float32, float64 or int32; anything it cannot share without a copy "
        "is a TypeError.");
}

}  // namespace

PyType_Slot* tensor_buffer_slots() { return tensor_slots; }
PyType_Slot* parameter_buffer_slots() { return parameter_slots; }

nb::object dlpack_of(const Tensor& t, nb::handle self, const nb::kwargs& kwargs) {
  // Through a NumPy view (owned by `self`), whose __dlpack__ handles every
  // keyword of the protocol (max_version, dl_device, copy, stream).
  return nb::cast(nb::ndarray<nb::numpy>(view_of(t, self))).attr("__dlpack__")(**kwargs);
}

nb::ndarray<> view_of(const Tensor& t, nb::handle owner) {
  SYLVA_CHECK(t.defined(), "[python] an undefined tensor has no data");
  const std::vector<size_t> shape = extents(t);
  return nb::ndarray<>(const_cast<void*>(t.raw()), shape.size(), shape.data(), owner, nullptr,
                       dlpack_dtype(t.dtype()), nb::device::cpu::value);
}

void copy_into(Tensor& dst, nb::handle src, const std::string& what) {
  // NumPy converts dtype and layout (as `a[...] = b` would); an array that
  // already matches passes through without a copy.
  nb::object np = nb::module_::import_("numpy");
  auto a = nb::cast<nb::ndarray<nb::device::cpu, nb::c_contig>>(
      np.attr("ascontiguousarray")(src, nb::arg("dtype") = std::string(dtype_name(dst.dtype()))));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < a.ndim(); ++i) dims.push_back(static_cast<int64_t>(a.shape(i)));
  SYLVA_CHECK(Shape(dims) == dst.shape(), "[python] ", what, ": expected shape ", dst.shape().str(), ", got ",
              Shape(dims).str());
  if (dst.nbytes() && a.data() != dst.raw()) std::memmove(dst.raw(), a.data(), dst.nbytes());
}

void apply_kwargs(nb::handle options, const nb::kwargs& kwargs, const char* who, nb::handle fallback) {
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    nb::handle target = options;
    if (!nb::hasattr(nb::handle(options.type()), name.c_str()) || name.starts_with("_")) target = fallback;
    if (!target.is_valid() || !nb::hasattr(nb::handle(target.type()), name.c_str()) || name.starts_with("_")) {
      nb::list names;
      for (nb::handle t : {options, fallback})
        if (t.is_valid())
          for (nb::handle n : nb::borrow<nb::list>(nb::module_::import_("builtins").attr("dir")(t)))
            if (!nb::cast<std::string>(n).starts_with("_")) names.append(n);
      throw nb::type_error((std::string(who) + "() got an unexpected keyword argument '" + name +
                            "'; its options are: " + nb::cast<std::string>(nb::str(", ").attr("join")(names)))
                               .c_str());
    }
    nb::setattr(target, name.c_str(), value);
  }
}

void bind_core(nb::module_& m) {
  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::class_<Device>(m, "Device", "Where kernels run and values live: \"cpu\", \"cuda\" or \"cuda:N\".")
      .def("__init__", [](Device* d, const std::string& s) { new (d) Device(Device::parse(s)); }, nb::arg("name"))
      .def_ro("index", &Device::index)
      .def_prop_ro("kind", [](const Device& d) { return std::string(d.kind == DeviceKind::cpu ? "cpu" : "cuda"); })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "sylva.Device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; });
  nb::implicitly_convertible<std::string, Device>();
  m.def("usable_cpu_cores", &usable_cpu_cores, "CPU cores this process may run on (its affinity mask).");
  bind_tensor(m);
}

}  // namespace sylva::python
