"""The zoo's models, declared as tables (files, blobs, input size, mean/norm, colour order) over
two post-processings: class scores and ncnn's detection rows. Names are ncnn's."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..layer import create_layer
from ..mat import Mat
from ..mat_ops import resize_bilinear
from ..net import Net
from ..paramdict import ParamDict
from ..utils.objects import Detect_Object
from .model_store import get_model_file

_BGR = Mat.PixelType.PIXEL_BGR
_BGR2RGB = Mat.PixelType.PIXEL_BGR2RGB

VOC_CLASSES = ["background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair",
               "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
               "train", "tvmonitor"]  # fmt: skip
COCO_CLASSES = ["background", "person", "bicycle", "car", "motorbike", "aeroplane", "bus", "train", "truck",
                "boat", "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat",
                "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
                "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
                "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
                "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
                "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "sofa", "pottedplant",
                "bed", "diningtable", "toilet", "tvmonitor", "laptop", "mouse", "remote", "keyboard",
                "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
                "scissors", "teddy bear", "hair drier", "toothbrush"]  # fmt: skip
PELEE_CLASSES = ["background", "person", "rider", "car", "bus", "truck", "bike", "motor", "traffic light",
                 "traffic sign", "train"]  # fmt: skip


class _Model:
    """A network from the model store and how an image goes in: ``files`` (param, bin), the
    ``input`` and ``output`` blobs, the square ``target_size`` the image is resized to, its
    pixel conversion and ``mean_vals``/``norm_vals``."""

    files: ClassVar[tuple[str, str]]
    input: ClassVar[str] = "data"
    output: ClassVar[str]
    default_size: ClassVar[int]
    pixel_type: ClassVar[int] = _BGR
    mean: ClassVar[list[float]] = []
    norm: ClassVar[list[float]] = []

    def __init__(self, target_size: int | None = None, num_threads: int = 1, use_gpu: bool = False) -> None:
        self.target_size = int(target_size or self.default_size)
        self.num_threads = num_threads
        self.use_gpu = use_gpu
        self.mean_vals = list(self.mean)
        self.norm_vals = list(self.norm)
        self.net = Net()
        self.net.opt.num_threads = num_threads
        self.net.opt.use_vulkan_compute = use_gpu
        param, weights = self.files
        if (
            self.net.load_param(get_model_file(param)) != 0
            or self.net.load_model(get_model_file(weights)) != 0
        ):
            raise RuntimeError(f"{type(self).__name__}: loading {param} / {weights} failed")

    def _input(self, img: np.ndarray) -> Mat:
        h, w = img.shape[:2]
        m = Mat.from_pixels_resize(img, self.pixel_type, w, h, self.target_size, self.target_size)
        m.substract_mean_normalize(self.mean_vals, self.norm_vals)
        return m

    def _run(self, img: np.ndarray, *outputs: str) -> list[Mat]:
        with self.net.create_extractor() as ex:
            ex.input(self.input, self._input(img))
            mats = []
            for name in outputs or (self.output,):
                ret, m = ex.extract(name)
                if ret != 0:
                    raise RuntimeError(f"{type(self).__name__}: extracting {name!r} failed")
                mats.append(m)
            return mats


class _Classifier(_Model):
    """Returns the class scores as a 1-D float32 array; ``softmax``: the net ends before it."""

    softmax: ClassVar[bool] = False

    def __call__(self, img: np.ndarray) -> np.ndarray:
        (out,) = self._run(img)
        if self.softmax:
            layer = create_layer("Softmax")
            assert layer is not None  # a built-in layer
            layer.load_param(ParamDict())
            layer.forward_inplace(out, self.net.opt)
        return np.array(out.reshape(out.w * out.h * out.c))


class _Detector(_Model):
    """Returns a list of ``Detect_Object`` from ncnn's detection rows ``[label, prob, x1, y1,
    x2, y2]`` (corners relative to the image); ``clamp``: corners clamped into the input."""

    class_names: ClassVar[list[str]] = VOC_CLASSES
    clamp: ClassVar[bool] = False

    def __call__(self, img: np.ndarray) -> list[Detect_Object]:
        (out,) = self._run(img)
        return self._objects(out, img.shape[1], img.shape[0])

    def _objects(self, out: Mat, img_w: int, img_h: int) -> list[Detect_Object]:
        rows = np.array(out).reshape(-1, 6) if not out.empty() else np.zeros((0, 6), np.float32)
        objects = []
        for label, prob, x1, y1, x2, y2 in rows.tolist():
            if self.clamp:
                s = self.target_size
                x1, y1, x2, y2 = (min(max(v * s, 0.0), s - 1.0) / s for v in (x1, y1, x2, y2))
                if np.isnan([x1, y1, x2, y2]).any():
                    continue
            x1, x2 = x1 * img_w, x2 * img_w
            y1, y2 = y1 * img_h, y2 * img_h
            objects.append(Detect_Object(label, prob, x1, y1, x2 - x1, y2 - y1))
        return objects


class SqueezeNet(_Classifier):
    files = ("squeezenet_v1.1.param", "squeezenet_v1.1.bin")
    output = "prob"
    default_size = 227
    mean = [104.0, 117.0, 123.0]


class ShuffleNetV2(_Classifier):
    files = ("shufflenet_v2_x0.5.param", "shufflenet_v2_x0.5.bin")
    output = "fc"
    default_size = 224
    norm = [1 / 255.0] * 3
    softmax = True


class MobileNet_SSD(_Detector):  # noqa: N801 - ncnn's names
    files = ("mobilenet_ssd_voc_ncnn.param", "mobilenet_ssd_voc_ncnn.bin")
    output = "detection_out"
    default_size = 300
    mean = [127.5] * 3
    norm = [0.007843] * 3


class SqueezeNet_SSD(_Detector):  # noqa: N801
    files = ("squeezenet_ssd_voc.param", "squeezenet_ssd_voc.bin")
    output = "detection_out"
    default_size = 300
    mean = [104.0, 117.0, 123.0]


class MobileNetV2_SSDLite(_Detector):  # noqa: N801
    files = ("mobilenetv2_ssdlite_voc.param", "mobilenetv2_ssdlite_voc.bin")
    output = "detection_out"
    default_size = 300
    mean = [127.5] * 3
    norm = [0.007843] * 3


class MobileNetV3_SSDLite(_Detector):  # noqa: N801
    files = ("mobilenetv3_ssdlite_voc.param", "mobilenetv3_ssdlite_voc.bin")
    input = "input"
    output = "detection_out"
    default_size = 300
    pixel_type = _BGR2RGB
    mean = [123.675, 116.28, 103.53]
    norm = [1.0] * 3
    clamp = True


class PeleeNet_SSD(_Detector):  # noqa: N801
    """Detections and the road segmentation map (a Mat resized to the image), as ncnn's."""

    files = ("pelee.param", "pelee.bin")
    output = "detection_out"
    default_size = 304
    mean = [103.9, 116.7, 123.6]
    norm = [0.017] * 3
    class_names = PELEE_CLASSES

    def __call__(self, img: np.ndarray) -> tuple[list[Detect_Object], Mat]:  # type: ignore[override]
        out, seg = self._run(img, self.output, "sigmoid")
        resized = Mat()
        resize_bilinear(seg, resized, img.shape[1], img.shape[0])
        return self._objects(out, img.shape[1], img.shape[0]), resized


class MobileNet_YoloV2(_Detector):  # noqa: N801
    files = ("mobilenet_yolo.param", "mobilenet_yolo.bin")
    output = "detection_out"
    default_size = 416
    mean = [1.0] * 3
    norm = [0.007843] * 3


class MobileNetV2_YoloV3(_Detector):  # noqa: N801
    files = ("mobilenetv2_yolov3.param", "mobilenetv2_yolov3.bin")
    output = "detection_out"
    default_size = 352
    mean = [127.5] * 3
    norm = [0.007843] * 3


class YoloV4_Tiny(_Detector):  # noqa: N801
    files = ("yolov4-tiny-opt.param", "yolov4-tiny-opt.bin")
    output = "output"
    default_size = 416
    pixel_type = _BGR2RGB
    norm = [1 / 255.0] * 3
    class_names = COCO_CLASSES


class YoloV4(YoloV4_Tiny):
    files = ("yolov4-opt.param", "yolov4-opt.bin")
    default_size = 608


_MODELS: dict[str, type[_Model]] = {
    "mobilenet_yolov2": MobileNet_YoloV2,
    "mobilenetv2_yolov3": MobileNetV2_YoloV3,
    "yolov4_tiny": YoloV4_Tiny,
    "yolov4": YoloV4,
    "mobilenet_ssd": MobileNet_SSD,
    "squeezenet_ssd": SqueezeNet_SSD,
    "mobilenetv2_ssdlite": MobileNetV2_SSDLite,
    "mobilenetv3_ssdlite": MobileNetV3_SSDLite,
    "squeezenet": SqueezeNet,
    "peleenet_ssd": PeleeNet_SSD,
    "shufflenetv2": ShuffleNetV2,
}

# ncnn's other models, and why they are not here
ABSENT: dict[str, str] = {
    "yolov5s": "decodes three anchor heads (sigmoid, grid, anchors) and runs NMS in Python: not ported",
    "yolov7_tiny": "decodes three anchor heads and runs NMS in Python: not ported",
    "yolov8s": "decodes distribution-focal box heads and runs NMS in Python: not ported",
    "yolact": "builds instance masks from prototypes and coefficients with its own priors: not ported",
    "faster_rcnn": "runs a second stage per proposal with its own box regression and NMS: not ported",
    "rfcn": "runs a second stage per proposal with its own box regression and NMS: not ported",
    "retinaface": "generates anchors per stride and decodes boxes and landmarks: not ported",
    "simplepose": "crops a person and decodes keypoint heatmaps: not ported",
    "nanodet": "decodes generalized-focal box distributions per stride and runs NMS: not ported",
}


def get_model(name: str, **kwargs) -> _Model:
    """The model ``name`` (case-insensitive), built with ``kwargs`` (``target_size``,
    ``num_threads``, ``use_gpu``; YoloV4 and YoloV4_Tiny have a fixed size, as ncnn's)."""
    key = name.lower()
    if key in ABSENT:
        raise NotImplementedError(f"model {name!r} is not in ncnn_c's model zoo: {ABSENT[key]}")
    if key not in _MODELS:
        names = "\n\t".join(sorted(_MODELS))
        raise ValueError(f'"{key}" is not among the following model list:\n\t{names}')
    cls = _MODELS[key]
    if issubclass(cls, YoloV4_Tiny) and "target_size" in kwargs:
        raise TypeError(f"{cls.__name__} has a fixed target_size")
    return cls(**kwargs)


def get_model_list() -> list[str]:
    """Names ``get_model`` builds (ncnn's other names are in ``ABSENT``)."""
    return list(_MODELS)
