# The book's concise MLP (d2l "Concise Implementation of Multilayer Perceptrons", PyTorch tab).
# The harness puts ROOT, IMAGES, BATCH, EPOCHS, SEED above this line.
import time
import torch
import torchvision
from torch import nn
from torchvision import transforms
torch.manual_seed(SEED)

net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
for m in net:
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, std=0.01)

train = torchvision.datasets.FashionMNIST(root=ROOT, train=True, transform=transforms.ToTensor())
train_iter = torch.utils.data.DataLoader(train, BATCH, shuffle=True, num_workers=0)
loss = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
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
