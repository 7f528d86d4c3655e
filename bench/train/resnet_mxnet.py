# ResNet-18 as the book builds it (d2l "Residual Networks (ResNet)", MXNet tab), Fashion-MNIST
# resized to 96x96, on the CPU; times training steps after one warm-up step.
# The harness puts ROOT, IMAGES, BATCH, STEPS, SEED above this line.
from mxnet import np, npx, gluon, autograd, init
from mxnet.gluon import nn
import mxnet as mx
import time
npx.set_np()
mx.random.seed(SEED)


class Residual(nn.Block):
    def __init__(self, num_channels, use_1x1conv=False, strides=1, **kwargs):
        super().__init__(**kwargs)
        self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2D(num_channels, kernel_size=1, strides=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm()
        self.bn2 = nn.BatchNorm()

    def forward(self, X):
        Y = npx.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3 is not None:
            X = self.conv3(X)
        return npx.relu(Y + X)


def resnet_block(num_channels, num_residuals, first_block=False):
    blk = nn.Sequential()
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.add(Residual(num_channels, use_1x1conv=True, strides=2))
        else:
            blk.add(Residual(num_channels))
    return blk


net = nn.Sequential()
net.add(nn.Conv2D(64, kernel_size=7, strides=2, padding=3),
        nn.BatchNorm(), nn.Activation('relu'),
        nn.MaxPool2D(pool_size=3, strides=2, padding=1))
net.add(resnet_block(64, 2, first_block=True),
        resnet_block(128, 2),
        resnet_block(256, 2),
        resnet_block(512, 2))
net.add(nn.GlobalAvgPool2D(), nn.Dense(10))
net.initialize(init.Xavier())

trans = gluon.data.vision.transforms.Compose([
    gluon.data.vision.transforms.Resize(96), gluon.data.vision.transforms.ToTensor()])
train_data = gluon.data.DataLoader(
    gluon.data.vision.datasets.FashionMNIST(root=ROOT, train=True).transform_first(trans),
    BATCH, shuffle=False)
loss = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.05})
step = 0
for X, y in train_data:
    if step == 1:
        tic = time.time()
    with autograd.record():
        l = loss(net(X), y)
    l.backward()
    trainer.step(BATCH)
    last = float(l.mean())
    step += 1
    if step == STEPS + 1:
        break
print("RESULT seconds=%.4f loss=%.4f" % ((time.time() - tic) / STEPS, last))
