# A training step of seed 003's LeNet (MXNet tutorial "Use GPUs", numpy mode) on gpu(0), checked
# against the same step on cpu(0) from the same parameters, then timed. Run by the GPU kit
# (tests/gpu/kit.py) through devarray; it reads:
#   KIT_BATCH  batch size (the seed's 256 on a card, a few images on the emulator)
#   KIT_STEPS  timed steps after the first
#   KIT_TMP    a folder for the parameter file
#   DEVARRAY_FASHION_MNIST  the FashionMNIST files (the kit carries tests/data/fashion-mnist-tiny)
# The last line is `KIT-RESULT {json}` for the report.
import json
import os
import time
from mxnet import np, npx, gluon, autograd, init
from mxnet.gluon import nn
npx.set_np()
np.random.seed(0)

batch_size = int(os.environ.get('KIT_BATCH', '256'))
steps = int(os.environ.get('KIT_STEPS', '5'))
params_file = os.path.join(os.environ.get('KIT_TMP', '/tmp'), 'kit-lenet.params')
gpu = npx.gpu(0)

def lenet():
    # The seed's network, as written there.
    net = nn.Sequential()
    net.add(nn.Conv2D(channels=6, kernel_size=5, activation='relu'),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=16, kernel_size=3, activation='relu'),
            nn.MaxPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation="relu"),
            nn.Dense(84, activation="relu"),
            nn.Dense(10))
    return net

transformer = gluon.data.vision.transforms.Compose([
    gluon.data.vision.transforms.ToTensor(),
    gluon.data.vision.transforms.Normalize(0.13, 0.31)])
train = gluon.data.vision.datasets.FashionMNIST(train=True)
loader = gluon.data.DataLoader(train.transform_first(transformer), batch_size, shuffle=False)
for data, label in loader:
    break

softmax_cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()

def step(net, trainer, X, y):
    with autograd.record():
        l = softmax_cross_entropy(net(X), y)
    l.backward()
    trainer.step(X.shape[0])
    return float(l.mean())

# The same parameters on both devices: initialised on the CPU, saved, loaded onto the card.
ref = lenet()
ref.initialize(init=init.Xavier())
_ = ref(data)
ref.save_parameters(params_file)
net = lenet()
net.load_parameters(params_file, ctx=gpu)
cpu_trainer = gluon.Trainer(ref.collect_params(), 'sgd', {'learning_rate': 0.1})
gpu_trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})

X, y = data.copyto(gpu), label.copyto(gpu)
loss_cpu = step(ref, cpu_trainer, data, label)
start = time.time()
loss_gpu = step(net, gpu_trainer, X, y)
npx.waitall()
first_step = time.time() - start

max_diff = 0.0
# In registration order: the second network's parameter names have other prefixes.
for p, q in zip(ref.collect_params().values(), net.collect_params().values()):
    diff = float(np.abs(q.data().copyto(npx.cpu()) - p.data()).max())
    max_diff = max(max_diff, diff)
first_loss_gpu = loss_gpu
print("batch %d: loss on cpu(0) %.6f, on gpu(0) %.6f; largest parameter difference after the step %.3g"
      % (X.shape[0], loss_cpu, loss_gpu, max_diff))

start = time.time()
for _ in range(steps):
    loss_gpu = step(net, gpu_trainer, X, y)
npx.waitall()
per_step = (time.time() - start) / max(steps, 1)
print("first step %.3f s (kernels compiled), then %.2f ms per step over %d steps, loss %.6f"
      % (first_step, per_step * 1000, steps, loss_gpu))
print("KIT-RESULT " + json.dumps({
    "batch": X.shape[0], "loss_cpu": loss_cpu, "loss_gpu": first_loss_gpu,
    "max_param_diff": max_diff, "first_step_s": first_step, "step_ms": per_step * 1000,
    "steps": steps, "loss_after": loss_gpu}))
