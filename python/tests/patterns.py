"""Small modules with the op patterns of BERT, GPT-2, Llama and ResNet-50 blocks."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class BertFfn(nn.Module):
    """dense + bias + GELU (erf), dense, residual add + LayerNorm."""

    def __init__(self, hidden=32, inner=128):
        super().__init__()
        self.up, self.down = nn.Linear(hidden, inner), nn.Linear(inner, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        return self.norm(self.down(F.gelu(self.up(x))) + x)


class Gpt2Mlp(nn.Module):
    """GPT-2's tanh GELU, written as HF's NewGELU and as F.gelu(approximate='tanh')."""

    def __init__(self, hidden=32):
        super().__init__()
        self.fc = nn.Linear(hidden, 4 * hidden)

    def forward(self, x):
        h = self.fc(x)
        new = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return new + F.gelu(h, approximate="tanh")


class Attention(nn.Module):
    """scores * scale + mask, softmax over the last axis."""

    def forward(self, q, k, mask):
        scores = torch.matmul(q, k.transpose(-1, -2)) * 0.125 + mask
        return torch.softmax(scores, dim=-1)


class LlamaRmsNorm(nn.Module):
    """HF LlamaRMSNorm: f32 upcast, mean of squares, rsqrt, downcast, weight."""

    def __init__(self, hidden=32, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden, dtype=torch.bfloat16) * 1.5)
        self.eps = eps

    def forward(self, x):
        h = x.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(torch.bfloat16)


class LlamaMlp(nn.Module):
    """down(silu(gate(x)) * up(x))."""

    def __init__(self, hidden=32, inner=64):
        super().__init__()
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class ResNetBlock(nn.Module):
    """conv, batchnorm + relu, conv, batchnorm, add + relu."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + x)


class BiasGeluReluAdd(nn.Module):
    """linear + bias + GELU, then relu(h) + y: two regions of the test package's ops."""

    def __init__(self, width=64):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x, y):
        h = F.gelu(self.lin(x))
        return torch.relu(h) + y


class ConvBnRelu(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))
