# The seed's LeNet (MXNet's "Use GPUs" tutorial, 6-use_gpus): Gluon, numpy interface, the batch split
# across two devices with split_and_load. devarray: two simulated GPUs; MXNet: two CPU contexts.
# The harness puts ROOT, IMAGES, BATCH, EPOCHS, SEED above this line.
from mxnet import np, npx, gluon, autograd
from mxnet.gluon import nn
import mxnet as mx
import time
npx.set_np()
mx.random.seed(SEED)

net = nn.Sequential()
net.add(nn.Conv2D(channels=6, kernel_size=5, activation='relu'),
        nn.MaxPool2D(pool_size=2, strides=2),
        nn.Conv2D(channels=16, kernel_size=3, activation='relu'),
        nn.MaxPool2D(pool_size=2, strides=2),
        nn.Dense(120, activation="relu"),
        nn.Dense(84, activation="relu"),
        nn.Dense(10))

transformer = gluon.data.vision.transforms.Compose([
    gluon.data.vision.transforms.ToTensor(),
    gluon.data.vision.transforms.Normalize(0.13, 0.31)])
train_data = gluon.data.DataLoader(
    gluon.data.vision.datasets.FashionMNIST(root=ROOT, train=True).transform_first(
        transformer), BATCH, shuffle=True, num_workers=4)

if npx.num_gpus() >= 2:
    devices = [npx.gpu(0), npx.gpu(1)]
else:
    devices = [npx.cpu(0), npx.cpu(1)]
net.collect_params().initialize(force_reinit=True, ctx=devices)
softmax_cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
for epoch in range(EPOCHS):
    train_loss = 0.
    tic = time.time()
    for data, label in train_data:
        data_list = gluon.utils.split_and_load(data, devices)
        label_list = gluon.utils.split_and_load(label, devices)
        with autograd.record():
            losses = [softmax_cross_entropy(net(X), y)
                      for X, y in zip(data_list, label_list)]
        for l in losses:
            l.backward()
        trainer.step(BATCH)
        train_loss += sum([float(l.sum()) for l in losses])
    print("RESULT seconds=%.4f loss=%.4f" % (time.time() - tic, train_loss / IMAGES))
