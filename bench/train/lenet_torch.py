# The book's LeNet (d2l "Convolutional Neural Networks (LeNet)", PyTorch tab): sigmoid activations,
# average pooling, SGD, torchvision's FashionMNIST through a DataLoader, on the CPU.
# The harness puts ROOT, IMAGES, BATCH, EPOCHS, SEED above this line.
import time
import torch
import torchvision
from torch import nn
from torchvision import transforms
torch.manual_seed(SEED)

net = nn.Sequential(
    nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(),
    nn.AvgPool2d(kernel_size=2, stride=2),
    nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(),
    nn.AvgPool2d(kernel_size=2, stride=2),
    nn.Flatten(),
    nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
    nn.Linear(120, 84), nn.Sigmoid(),
    nn.Linear(84, 10))
for m in net:
    if type(m) == nn.Linear or type(m) == nn.Conv2d:
        nn.init.xavier_uniform_(m.weight)

train = torchvision.datasets.FashionMNIST(root=ROOT, train=True, transform=transforms.ToTensor())
train_iter = torch.utils.data.DataLoader(train, BATCH, shuffle=True, num_workers=0)
loss = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.9)
for epoch in range(EPOCHS):
    total = 0.0
    tic = time.time()
    for X, y in train_iter:
        optimizer.zero_grad()
        l = loss(net(X), y)
        l.backward()
        optimizer.step()
        total += l.item() * X.shape[0]
    print("RESULT seconds=%.4f loss=%.4f" % (time.time() - tic, total / IMAGES))
